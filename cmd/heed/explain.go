package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/profile"
)

// maxExplainBody is how much of a response body explain reads.
const maxExplainBody = 1 << 20

// runExplain reads an HTTP/1.1 response head (and optionally a body) on
// stdin and shows what it says about rate limits.
func runExplain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON object instead of a table")
	at := fs.String("at", "", "the instant the response was received, RFC 3339 (default: now)")
	profileName := fs.String("profile", "", "provider profile, to show the scope a throttle blocks: "+strings.Join(profile.Names(), ", "))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: heed explain [-json] [-at RFC3339] [-profile NAME] < response.txt")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	prof, ok := profile.ByName(*profileName)
	if !ok {
		return usagef("explain: unknown profile %q (want one of %s)", *profileName, strings.Join(profile.Names(), ", "))
	}
	now := time.Now()
	if *at != "" {
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			return usagef("explain: -at %q is not an RFC 3339 time such as 2026-11-29T12:00:00Z", *at)
		}
		now = t
	}
	resp, body, err := readResponse(stdin)
	if err != nil {
		return err
	}
	o := header.Parse(resp.StatusCode, resp.Header, body, now)
	blocks := ""
	if *profileName != "" && o.Throttled {
		blocks = o.ReasonScope
		if blocks == "" {
			blocks = prof.BlockScope()
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		e := explanationOf(&o, now)
		e.Blocks = nonEmpty(blocks)
		return enc.Encode(e)
	}
	if blocks != "" {
		blocks = "the " + blocks + " (profile " + *profileName + ")"
	}
	return writeTable(stdout, &o, now, blocks)
}

// readResponse reads a response head and up to maxExplainBody of its body.
// curl -i prints "HTTP/2 429"; that status line is read as HTTP/1.1.
func readResponse(stdin io.Reader) (*http.Response, []byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(stdin, 2*maxExplainBody), 64<<10)
	first, err := br.Peek(len("HTTP/2 "))
	switch {
	case len(first) == 0:
		return nil, nil, usagef("explain: stdin is empty; pipe in a response head such as \"HTTP/1.1 429 Too Many Requests\"")
	case err == nil && (bytes.Equal(first, []byte("HTTP/2 ")) || bytes.Equal(first, []byte("HTTP/3 "))):
		br.Discard(len("HTTP/2"))
		br = bufio.NewReader(io.MultiReader(strings.NewReader("HTTP/1.1"), br))
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		if len(msg) > 80 {
			msg = msg[:77] + "..."
		}
		return nil, nil, usagef("explain: stdin is not an HTTP response head: %s", msg)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExplainBody))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, fmt.Errorf("explain: read body: %w", err)
	}
	return resp, body, nil
}

// explanation is the JSON form of an Observation. Pointers are null where
// the response did not convey a value; the fields added later (a hint, a
// cost, a utilization, a partition) are left out instead. Only a throttle
// has a retry_after_seconds: a wait a response suggests without mandating
// it (a Retry-After on a 3xx, a reset on a 200) is hint_seconds.
type explanation struct {
	Status           int        `json:"status"`
	Throttled        bool       `json:"throttled"`
	RetryAfter       *float64   `json:"retry_after_seconds"`
	RetryAfterSource *string    `json:"retry_after_source"`
	Hint             *float64   `json:"hint_seconds,omitempty"`
	HintSource       *string    `json:"hint_source,omitempty"`
	Reason           *string    `json:"reason"`
	Limits           []limitDoc `json:"limits"`
	Warnings         []string   `json:"warnings"`
	// Blocks is the kind of scope a throttle blocks under -profile.
	Blocks *string `json:"blocks,omitempty"`
}

type limitDoc struct {
	Name       *string  `json:"name"`
	Unit       string   `json:"unit"`
	Scope      *string  `json:"scope"`
	Limit      *float64 `json:"limit"`
	Remaining  *float64 `json:"remaining"`
	Window     *float64 `json:"window_seconds"`
	ResetAfter *float64 `json:"reset_after_seconds"`
	Cost       *float64 `json:"cost,omitempty"`
	Used       *float64 `json:"utilization,omitempty"`
	Partition  *string  `json:"partition,omitempty"`
	Dialect    string   `json:"dialect"`
}

func explanationOf(o *header.Observation, now time.Time) explanation {
	e := explanation{
		Status:    o.Status,
		Throttled: o.Throttled,
		Limits:    []limitDoc{},
		Warnings:  append([]string{}, o.Warnings...),
	}
	if o.HasRetryAfter {
		e.RetryAfter = ptr(o.RetryAfter.Seconds())
	}
	e.RetryAfterSource = nonEmpty(o.RetryAfterSource)
	if o.HasHint {
		e.Hint, e.HintSource = ptr(o.Hint.Seconds()), nonEmpty(o.HintSource)
	}
	e.Reason = nonEmpty(o.Reason)
	for i := range o.Limits {
		l := &o.Limits[i]
		d := limitDoc{Name: nonEmpty(l.Name), Unit: string(l.Unit), Scope: nonEmpty(l.Scope), Dialect: string(l.Dialect)}
		if l.Has(header.HasQuota) {
			d.Limit = ptr(l.Quota)
		}
		if l.Has(header.HasRemaining) {
			d.Remaining = ptr(l.Remaining)
		}
		if l.Has(header.HasWindow) {
			d.Window = ptr(l.Window.Seconds())
		}
		if l.Has(header.HasReset) {
			d.ResetAfter = ptr(max(l.Reset.Sub(now), 0).Seconds())
		}
		if l.Has(header.HasCost) {
			d.Cost = ptr(l.Cost)
		}
		if l.Has(header.HasUtilization) {
			d.Used = ptr(l.Utilization)
		}
		d.Partition = nonEmpty(l.Partition)
		e.Limits = append(e.Limits, d)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// writeTable prints o as aligned text.
func writeTable(w io.Writer, o *header.Observation, now time.Time, blocks string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	status := strconv.Itoa(o.Status) + " " + http.StatusText(o.Status)
	if o.Throttled {
		status += " (throttled)"
	} else {
		status += " (not throttled)"
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	wait := "none"
	if o.HasRetryAfter {
		wait = o.RetryAfter.String() + " (from " + o.RetryAfterSource + ")"
	}
	fmt.Fprintf(tw, "retry after\t%s\n", wait)
	if o.HasHint {
		fmt.Fprintf(tw, "hint\t%s (from %s; not a mandated wait)\n", o.Hint, o.HintSource)
	}
	reason := "none"
	if o.Reason != "" {
		reason = o.Reason
		if o.ReasonScope != "" {
			reason += " (back off the " + o.ReasonScope + " scope)"
		}
	}
	fmt.Fprintf(tw, "reason\t%s\n", reason)
	if o.NearLimit {
		fmt.Fprintf(tw, "near limit\tyes\n")
	}
	if blocks != "" {
		fmt.Fprintf(tw, "blocks\t%s\n", blocks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(o.Limits) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tUNIT\tSCOPE\tLIMIT\tREMAINING\tWINDOW\tRESETS IN\tDIALECT")
		for i := range o.Limits {
			l := &o.Limits[i]
			dialect := string(l.Dialect)
			if l.Informational {
				dialect += " (informational)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(l.Name), l.Unit, dash(l.Scope),
				num(l, header.HasQuota, l.Quota), num(l, header.HasRemaining, l.Remaining),
				dur(l, header.HasWindow, l.Window), dur(l, header.HasReset, max(l.Reset.Sub(now), 0)), dialect)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(o.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, warning := range o.Warnings {
			fmt.Fprintln(w, "  "+warning)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(l *header.Limit, k header.Known, v float64) string {
	if !l.Has(k) {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func dur(l *header.Limit, k header.Known, d time.Duration) string {
	if !l.Has(k) {
		return "?"
	}
	return d.String()
}
