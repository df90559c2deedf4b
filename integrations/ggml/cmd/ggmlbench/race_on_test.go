//go:build race

package main

// raceEnabled: the race detector slows planning the LLaMA-7B graphs tenfold.
const raceEnabled = true
