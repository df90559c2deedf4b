module github.com/subarena/subarena

go 1.26
