package worktree

import (
	"container/list"
	"sync"
)

// A file at a commit never changes, yet a night asks for the same ones again and again: each
// attempt's gate reads the base version of every file its change touched, each submit again,
// and every ticket of a repository reads its instructions and test configuration at the same
// base. Each read was two git processes (ls-tree, cat-file): tens of milliseconds apiece on
// a loaded machine. baseFiles keeps the answers, bounded in bytes.

// baseCacheBytes bounds what baseFiles holds in all; baseCacheEntryBytes is the largest file
// it keeps (a larger one is read from git each time, as before).
const (
	baseCacheBytes      = 8 << 20
	baseCacheEntryBytes = 512 << 10
)

// baseFiles is the daemon's cache of FileAtBase answers.
var baseFiles = newBaseCache(baseCacheBytes, baseCacheEntryBytes)

// baseKey names one file at one commit of one repository. The repository's object store is
// part of it: the same hash names the same commit everywhere, but git replace refs may show
// one repository's commit with another tree.
type baseKey struct{ commonDir, commit, rel string }

// baseAnswer is what FileAtBase found: data, or nothing at the commit (found false). Errors
// are never kept: a failed git command may succeed the next time.
type baseAnswer struct {
	data  []byte
	found bool
}

// baseCache is a least-recently-used map of base files, safe for concurrent use.
type baseCache struct {
	mu         sync.Mutex
	max, entry int64 // bytes in all; bytes of one file
	size       int64
	order      *list.List // of *baseItem, most recent first
	items      map[baseKey]*list.Element
}

type baseItem struct {
	key baseKey
	ans baseAnswer
}

func newBaseCache(max, entry int64) *baseCache {
	return &baseCache{max: max, entry: entry, order: list.New(), items: map[baseKey]*list.Element{}}
}

// get returns a copy of the kept answer for k: callers may change what they are handed.
func (c *baseCache) get(k baseKey) (baseAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return baseAnswer{}, false
	}
	c.order.MoveToFront(e)
	ans := e.Value.(*baseItem).ans
	if ans.data != nil {
		ans.data = append([]byte(nil), ans.data...)
	}
	return ans, true
}

// put keeps a copy of ans for k, when it is small enough, dropping the least recently used
// answers until the whole fits.
func (c *baseCache) put(k baseKey, ans baseAnswer) {
	n := int64(len(ans.data)) + int64(len(k.commonDir)+len(k.commit)+len(k.rel))
	if n > c.entry {
		return
	}
	if ans.data != nil {
		ans.data = append([]byte(nil), ans.data...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&baseItem{key: k, ans: ans})
	c.size += n
	for c.size > c.max {
		last := c.order.Back()
		it := last.Value.(*baseItem)
		c.order.Remove(last)
		delete(c.items, it.key)
		c.size -= int64(len(it.ans.data)) + int64(len(it.key.commonDir)+len(it.key.commit)+len(it.key.rel))
	}
}

// fullHash reports whether s is a whole object name (SHA-1 or SHA-256 hex), which names one
// commit for good, unlike a branch or an abbreviation.
func fullHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
