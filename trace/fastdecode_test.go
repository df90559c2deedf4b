package trace_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// fastCorpus returns documents decodeFast should read: the trace test data, generated
// shapes, random traces as Write spells them, and hand-written forms Write never uses
// (defaults left out, keys in another order, empty lists, negative numbers).
func fastCorpus(t *testing.T) [][]byte {
	t.Helper()
	var docs [][]byte
	paths, _ := filepath.Glob("testdata/*.json")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
	}
	docs = append(docs, tracetest.Loop(20, 2, 3), tracetest.Views(30), tracetest.Fanin(20), tracetest.Strided(40))
	rng := rand.New(rand.NewPCG(71, 72))
	for range 60 {
		docs = append(docs, trace.Marshal(tracetest.RandomTrace(rng, 40)))
	}
	docs = append(docs,
		[]byte(`{"engines": ["e"], "steps": [], "format": "subarena-trace/v1"}`),
		[]byte("\t{\"format\":\"subarena-trace/v1\",\"engines\":[\"a\",\"b\"],\"granule\":64,\"name\":\"x y\",\"steps\":[\r\n"+
			`{"size":64,"alloc":"A","shape":[4,4],"elem":4},{"view":"v","elem":4,"of":"A","offset":-0,"shape":[],"strides":[]},`+
			`{"op":"o","reads":[],"writes":["A"],"waits":[],"inplace":false,"engine":"b","cost":7},{"op":"p","inplace":true},`+
			`{"sync":"o"},{"release":"A"},{"external":"X","size":9}]}  `),
	)
	return docs
}

// TestFastDecodeMatchesDecode: on the corpus decodeFast reads every document, and gives
// the Trace and step offsets decodeStrict gives.
func TestFastDecodeMatchesDecode(t *testing.T) {
	for i, data := range fastCorpus(t) {
		ft, foffs, ok := trace.DecodeFast(data)
		st, soffs, err := trace.DecodeStrict(data)
		if err != nil {
			t.Fatalf("doc %d: decodeStrict: %v\n%s", i, err, data)
		}
		if !ok {
			t.Fatalf("doc %d: decodeFast gave up on\n%s", i, data)
		}
		if !reflect.DeepEqual(ft, st) || !reflect.DeepEqual(foffs, soffs) {
			t.Fatalf("doc %d: decodeFast\n%+v %v\ndecode\n%+v %v", i, ft, foffs, st, soffs)
		}
	}
}

// TestFastDecodeMutations: documents damaged at random (bytes replaced, inserted or
// deleted, from JSON's own alphabet) that decodeFast reads, decodeStrict reads too, to the same
// Trace; and Parse's answer, error text included, is decodeStrict's.
func TestFastDecodeMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	corpus := fastCorpus(t)
	alphabet := []byte(`{}[]:,"\ -+.0123456789eEtruefalsnl` + "\t\n\x00\xff" + `abcdefghijklmnopqrstuvwxyz_`)
	read, n := 0, testutil.Count(3000, 600)
	for iter := range n {
		src := corpus[rng.IntN(len(corpus))]
		if len(src) > 4000 {
			src = src[:4000] // the damage matters, not the length
		}
		data := append([]byte(nil), src...)
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(data) + 1)
			c := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(3) {
			case 0:
				if at < len(data) {
					data[at] = c
				}
			case 1:
				data = append(data[:at], append([]byte{c}, data[at:]...)...)
			default:
				if at < len(data) {
					data = append(data[:at], data[at+1:]...)
				}
			}
		}
		ft, foffs, ok := trace.DecodeFast(data)
		st, soffs, err := trace.DecodeStrict(data)
		if ok {
			read++
			if err != nil {
				t.Fatalf("iter %d: decodeFast read a document decodeStrict rejects (%v):\n%s", iter, err, data)
			}
			if !reflect.DeepEqual(ft, st) || !reflect.DeepEqual(foffs, soffs) {
				t.Fatalf("iter %d: decodeFast and decodeStrict differ on\n%s", iter, data)
			}
		}
		_, perr := trace.Parse(data)
		var want error
		if err != nil {
			want = trace.Locate(err, data, soffs)
		} else if _, rerr := st.Resolve(); rerr != nil {
			want = trace.Locate(rerr, data, soffs)
		}
		if (perr == nil) != (want == nil) || (perr != nil && perr.Error() != want.Error()) {
			t.Fatalf("iter %d: Parse says %v, decodeStrict and Resolve %v", iter, perr, want)
		}
	}
	t.Logf("decodeFast read %d of %d damaged documents", read, n)
	if read == 0 {
		t.Fatal("decodeFast read no damaged document")
	}
}

// FuzzFastDecode: whatever decodeFast reads, decodeStrict reads to the same Trace.
func FuzzFastDecode(f *testing.F) {
	f.Add([]byte(`{"format": "subarena-trace/v1", "engines": ["e"], "steps": [{"alloc": "a", "size": 8}]}`))
	f.Add(tracetest.Loop(3, 2, 2))
	f.Add(tracetest.Views(4))
	f.Fuzz(func(t *testing.T, data []byte) {
		ft, foffs, ok := trace.DecodeFast(data)
		if !ok {
			return
		}
		st, soffs, err := trace.DecodeStrict(data)
		if err != nil {
			t.Fatalf("decodeFast read a document decodeStrict rejects (%v)", err)
		}
		if !reflect.DeepEqual(ft, st) || !reflect.DeepEqual(foffs, soffs) {
			t.Fatal("decodeFast and decodeStrict differ")
		}
	})
}
