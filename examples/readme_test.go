package examples

import (
	"os"
	"strings"
	"testing"
)

// TestREADME checks that every Go snippet of the README says it comes
// from a file of this module ("from [`examples/NAME`]") and is in that
// file, word for word or indented one tab less, so that the README's
// snippets compile and are tested.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "rom [`examples/"
	n := 0
	for rest := string(b); ; {
		i := strings.Index(rest, marker)
		if i < 0 {
			break
		}
		rest = rest[i+len(marker):]
		name, _, _ := strings.Cut(rest, "`")
		start := strings.Index(rest, "```go\n")
		end := strings.Index(rest[start+6:], "\n```")
		if start < 0 || end < 0 {
			t.Fatalf("README: no go block after the mention of examples/%s", name)
		}
		snippet := rest[start+6 : start+6+end+1]
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("README names examples/%s: %v", name, err)
		}
		indented := "\t" + strings.ReplaceAll(strings.TrimSuffix(snippet, "\n"), "\n", "\n\t") + "\n"
		indented = strings.ReplaceAll(indented, "\t\n", "\n")
		if !strings.Contains(string(src), snippet) && !strings.Contains(string(src), indented) {
			t.Errorf("README's snippet from examples/%s is not in that file:\n%s", name, snippet)
		}
		n++
	}
	if blocks := strings.Count(string(b), "```go\n"); n != blocks || n < 9 {
		t.Errorf("README has %d snippets from examples/ of its %d Go blocks, want every one, at least 9 (one per SDK, their use, Jira, Redis and TLS)", n, blocks)
	}
}
