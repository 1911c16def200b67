package github

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// etagCache makes every GET conditional: it remembers each 200 answer that carried an ETag
// and sends If-None-Match next time. GitHub answers an unchanged resource with 304, which
// costs no rate limit; the cache then hands go-github the remembered page (with the fresh
// rate-limit headers of the 304), so pagination and decoding work unchanged.
//
// go-github leaves conditional requests to the transport. A full RFC 9111 cache would also
// serve answers without asking (max-age), which would hide a closed issue for up to a
// minute: here every request reaches GitHub and only the body is reused.
type etagCache struct {
	next http.RoundTripper

	mu      sync.Mutex
	entries map[string]*etagEntry
	// notModified counts 304 answers served from the cache.
	notModified atomic.Int64
}

type etagEntry struct {
	etag   string
	header http.Header
	body   []byte
	// fullLastPage marks a listing page holding exactly per_page items and no next page:
	// an item added after it starts a new page without changing this one, so GitHub still
	// answers it 304, and its 304 carries no Link header. Such a page is asked again
	// unconditionally, or the new page would never be read.
	fullLastPage bool
}

// Limits that keep the cache small: pages of 100 issues are ~500 KB at most.
const (
	maxCachedBody    = 4 << 20
	maxCachedEntries = 2000
)

// cacheHeader marks a response served from the cache after a 304.
const cacheHeader = "X-Ticketd-Not-Modified"

func newETagCache(next http.RoundTripper) *etagCache {
	if next == nil {
		next = http.DefaultTransport
	}
	return &etagCache{next: next, entries: map[string]*etagEntry{}}
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return c.next.RoundTrip(req)
	}
	key := req.URL.String()
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	if e != nil && !e.fullLastPage {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", e.etag)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && e != nil && !e.fullLastPage:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		c.notModified.Add(1)
		h := e.header.Clone()
		for k, v := range resp.Header {
			if strings.HasPrefix(k, "X-Ratelimit-") || k == "Date" || k == "Etag" {
				h[k] = v
			}
		}
		h.Set(cacheHeader, "1")
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor,
			ProtoMinor: resp.ProtoMinor, Header: h, Body: io.NopCloser(bytes.NewReader(e.body)),
			ContentLength: int64(len(e.body)), Request: resp.Request,
		}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxCachedBody+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) <= maxCachedBody {
			c.mu.Lock()
			if len(c.entries) >= maxCachedEntries {
				clear(c.entries) // crude but bounded: the next poll refills what is still asked for
			}
			c.entries[key] = &etagEntry{etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body,
				fullLastPage: fullLastPage(req.URL, resp.Header, body)}
			c.mu.Unlock()
		}
	}
	return resp, nil
}

// fullLastPage reports whether body is a listing page of exactly per_page items whose Link
// header names no next page.
func fullLastPage(u *url.URL, h http.Header, body []byte) bool {
	per, err := strconv.Atoi(u.Query().Get("per_page"))
	if err != nil || per <= 0 || strings.Contains(h.Get("Link"), `rel="next"`) {
		return false
	}
	var items []json.RawMessage
	return json.Unmarshal(body, &items) == nil && len(items) == per
}

// notModified reports whether resp was answered 304 and served from the cache.
func notModified(resp *http.Response) bool {
	return resp != nil && resp.Header.Get(cacheHeader) != ""
}
