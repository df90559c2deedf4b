package trace

import (
	"os"
	"path/filepath"
	"testing"

	subarena "github.com/subarena/subarena"
)

func benchData(b *testing.B, rel string) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(sharedData, rel))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchProgram(b *testing.B, rel string) *Program {
	b.Helper()
	data := benchData(b, rel)
	tr, err := Read(bytesReader(data), filepath.Base(rel))
	if err != nil {
		b.Fatal(err)
	}
	p, err := tr.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkReadGGML(b *testing.B) {
	data := benchData(b, "ggml/ggml-tiny.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(bytesReader(data), "ggml-tiny"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRoundTripGGML(b *testing.B) {
	data := Marshal(benchProgram(b, "ggml/ggml-tiny.json").Trace)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReplay(b *testing.B, rel string, pol subarena.Policy) {
	p := benchProgram(b, rel)
	b.ReportAllocs()
	var res *ReplayResult
	for b.Loop() {
		var err error
		if res, err = Replay(p, ReplayOptions{Policy: pol}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.HWM), "hwm-bytes")
	b.ReportMetric(res.Overhead, "overhead")
}

func BenchmarkReplayGGML(b *testing.B) {
	benchReplay(b, "ggml/ggml-tiny.json", subarena.SubrangeFenced)
}
func BenchmarkReplayMiniMallocK(b *testing.B) {
	benchReplay(b, "minimalloc/K.1048576.csv", subarena.SubrangeFenced)
}

func benchCheck(b *testing.B, rel string) {
	p := benchProgram(b, rel)
	res, err := Replay(p, ReplayOptions{Policy: subarena.SubrangeFenced})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var rep *Report
	for b.Loop() {
		if rep, err = Check(p, res.Plan); err != nil || !rep.Safe {
			b.Fatal(err, rep)
		}
	}
	b.ReportMetric(float64(rep.Pairs), "pairs")
}

func BenchmarkCheckGGML(b *testing.B)        { benchCheck(b, "ggml/ggml-tiny.json") }
func BenchmarkCheckMiniMallocK(b *testing.B) { benchCheck(b, "minimalloc/K.1048576.csv") }
