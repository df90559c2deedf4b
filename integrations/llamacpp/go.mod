module github.com/subarena/subarena/integrations/llamacpp

go 1.26.0

require (
	github.com/subarena/subarena v0.0.0
	github.com/subarena/subarena/integrations/ggml v0.0.0
)

require golang.org/x/sync v0.25.0 // indirect

replace (
	github.com/subarena/subarena => ../..
	github.com/subarena/subarena/integrations/ggml => ../ggml
)
