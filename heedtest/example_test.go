package heedtest_test

import (
	"fmt"
	"net/http"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// Script the server's answers and see what heed sent. A POST that meets a
// 429 is not retried: it is sent once and the 429 comes back. (Run such
// tests inside a testing/synctest bubble and the recorded times are exact.)
func ExampleScript() {
	s := &heedtest.Script{Responses: []heedtest.Response{
		{Status: 429, Header: heedtest.Headers("Retry-After", "3")},
	}}
	client := &http.Client{Transport: &heed.Transport{Base: s}}
	resp, err := client.Post("https://api.example/v1/things", "application/json", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, s.Count(), s.Sent()[0].Method)
	// Output: 429 1 POST
}
