//go:build !unix

package diskfault

// Full cannot tell a full file system here: it says false.
func Full(dir string) bool { return false }
