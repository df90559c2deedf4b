module github.com/subarena/subarena/integrations/ggml

go 1.26.0

require github.com/subarena/subarena v0.0.0

require golang.org/x/sync v0.25.0 // indirect

replace github.com/subarena/subarena => ../..
