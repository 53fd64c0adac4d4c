// Package render writes a Result as iperf3's text, -J document and
// --json-stream events, and as blast's CSV. Every renderer prints the
// Result's one Summary (result.Summarize, result.SummarizeInterval) and
// adds nothing up itself, so the three cannot disagree; golden files in
// testdata/golden pin each output byte for byte (-update rewrites them).
package render
