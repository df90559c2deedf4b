package ggmltrace

// Quote is quote, for the external tests (which read through package trace/tracefile,
// which imports this one).
var Quote = quote
