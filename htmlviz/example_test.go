package htmlviz_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/subarena/subarena/htmlviz"
)

// A page of one buffer whose second half stays pending while a copy engine reads it
// through a view: Write makes one HTML file that opens from disk. (bench.ViewerPage
// builds such pages from a trace and its replays or plans.)
func ExampleWrite() {
	page := &htmlviz.Page{
		Trace: "example", Granule: 256, Steps: 4, Engines: []string{"compute", "copy"},
		Buffers: []htmlviz.Buffer{{Name: "kv", Size: 512, Step: 0, Release: 2}},
		Views:   []htmlviz.View{{Name: "v", Buffer: 0, Parent: -1, Step: 1, Discard: -1}},
		Ops:     []htmlviz.Op{{Name: "offload", Engine: 1, Seq: 1, Step: 1, Done: 4, Start: 0, End: 20}},
		Runs: []htmlviz.Run{{Label: "subrange-fenced", Kind: "replay", HWM: 512, HighWater: []int64{512, 512, 512, 512},
			Pieces: []htmlviz.Piece{
				{Buffer: 0, Lo: 0, Hi: 512, From: 0, To: 2, Holder: -1, Host: -1,
					Users: []htmlviz.Use{{Op: 0, View: 0, Access: "read"}}},
				{Buffer: 0, Lo: 256, Hi: 512, From: 2, To: 4, Pending: true, Holder: -1, Host: -1,
					Users: []htmlviz.Use{{Op: 0, View: 0, Access: "read"}}},
			}}},
	}
	var b strings.Builder
	if err := htmlviz.Write(&b, page); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	html := b.String()
	fmt.Println(strings.SplitN(html, "\n", 2)[0])
	fmt.Println(strings.Contains(html, `"schema":"subarena-viewer/v1"`))
	fmt.Println(strings.Contains(html, `[0,256,512,2,4,1,-1,-1,[0,0,1]]`))
	// Output:
	// <!DOCTYPE html>
	// true
	// true
}
