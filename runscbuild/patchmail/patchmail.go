// Package patchmail reads and rewrites the headers and trailers of `git
// format-patch` mails: the committed series is authored by Placeholder with
// one trailer, AssistedBy; at send time Author puts the sender in From: and
// adds their Signed-off-by:.
package patchmail

import (
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Placeholder is the From: of every committed patch: not a person, and an
// address that cannot be delivered (RFC 2606 reserves ".invalid").
const Placeholder = "Author Set At Send Time <author@send-time.invalid>"

// AssistedBy is the one trailer form for tool-assisted patches, as gVisor's
// CONTRIBUTING.md ("Label AI-assisted Work") writes it.
const AssistedBy = "Assisted-by: Claude"

// identityTrailer matches trailers that name a person.
var identityTrailer = regexp.MustCompile(`(?i)^(signed-off-by|co-authored-by|co-developed-by|reviewed-by|acked-by|tested-by):`)

var assistedTrailer = regexp.MustCompile(`(?i)^assisted-by:`)

// trailerLine matches a trailer: a hyphenated key or one of the usual
// one-word ones (prose such as "Fix: it does not." is not one).
var trailerLine = regexp.MustCompile(`^([A-Za-z0-9]+(-[A-Za-z0-9]+)+|Fixes|Closes|Updates|Bug|Link|Cc): `)

// Mail is a format-patch mail split into its parts. Joined back with String,
// an unchanged Mail is byte for byte the input.
type Mail struct {
	Envelope string   // the "From <sha> Mon Sep 17 00:00:00 2001" line, with its newline
	Header   []string // header fields as written (folded lines joined by "\n"), without newline
	Message  []string // the commit message body, up to the "---" line
	Rest     string   // from the "---" line on: diffstat and diff
}

// Parse splits a format-patch mail.
func Parse(data []byte) (*Mail, error) {
	s := string(data)
	m := &Mail{}
	if !strings.HasPrefix(s, "From ") {
		return nil, errors.New("not a git format-patch mail: no leading \"From <sha>\" line")
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return nil, errors.New("mail ends after its first line")
	}
	m.Envelope, s = s[:nl+1], s[nl+1:]
	head, body, ok := strings.Cut(s, "\n\n")
	if !ok {
		return nil, errors.New("mail has no blank line after its header")
	}
	for _, line := range strings.Split(head, "\n") {
		if (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && len(m.Header) > 0 {
			m.Header[len(m.Header)-1] += "\n" + line
			continue
		}
		m.Header = append(m.Header, line)
	}
	// The message ends at the first line that is exactly "---"; a patch
	// without one (no diffstat) ends at the first "diff --git".
	lines := strings.SplitAfter(body, "\n")
	end := len(lines)
	for i, l := range lines {
		if l == "---\n" || strings.HasPrefix(l, "diff --git ") {
			end = i
			break
		}
	}
	for _, l := range lines[:end] {
		m.Message = append(m.Message, strings.TrimSuffix(l, "\n"))
	}
	m.Rest = strings.Join(lines[end:], "")
	if end == len(lines) {
		return nil, errors.New("mail has no \"---\" line or diff after its message")
	}
	return m, nil
}

// String joins the mail back together.
func (m *Mail) String() string {
	var b strings.Builder
	b.WriteString(m.Envelope)
	for _, f := range m.Header {
		b.WriteString(f + "\n")
	}
	b.WriteString("\n")
	for _, l := range m.Message {
		b.WriteString(l + "\n")
	}
	b.WriteString(m.Rest)
	return b.String()
}

// field is the index of the header field name in m.Header, or -1.
func (m *Mail) field(name string) int {
	return slices.IndexFunc(m.Header, func(f string) bool {
		k, _, ok := strings.Cut(f, ":")
		return ok && strings.EqualFold(k, name)
	})
}

// Get returns the unfolded value of the header field name.
func (m *Mail) Get(name string) (string, bool) {
	i := m.field(name)
	if i < 0 {
		return "", false
	}
	_, v, _ := strings.Cut(strings.ReplaceAll(m.Header[i], "\n", ""), ":")
	return strings.TrimSpace(v), true
}

// Set replaces the header field name (or adds it after the last field).
func (m *Mail) Set(name, value string) {
	line := name + ": " + value
	if i := m.field(name); i >= 0 {
		m.Header[i] = line
		return
	}
	m.Header = append(m.Header, line)
}

// trailerBlock returns the bounds in m.Message of the trailer block: the
// last paragraph, when every line of it is "Key: value"; with none, both
// are the index after the last non-blank line.
func (m *Mail) trailerBlock() (start, end int) {
	end = len(m.Message)
	for end > 0 && strings.TrimSpace(m.Message[end-1]) == "" {
		end--
	}
	start = end
	for start > 0 && strings.TrimSpace(m.Message[start-1]) != "" {
		start--
	}
	for _, l := range m.Message[start:end] {
		if !trailerLine.MatchString(l) {
			return end, end
		}
	}
	return start, end
}

// Trailers returns the trailer lines of the commit message.
func (m *Mail) Trailers() []string {
	start, end := m.trailerBlock()
	return slices.Clone(m.Message[start:end])
}

// setTrailers replaces the trailer block (or adds one).
func (m *Mail) setTrailers(trailers []string) {
	start, end := m.trailerBlock()
	msg := slices.Clone(m.Message[:start])
	if start == end && start > 0 {
		msg = append(msg, "")
	}
	msg = append(msg, trailers...)
	msg = append(msg, m.Message[end:]...)
	m.Message = msg
}

// Problems lists what keeps a committed patch from being neutral: a From:
// other than Placeholder, a trailer naming a person, or not exactly one
// AssistedBy trailer.
func Problems(data []byte) []string {
	m, err := Parse(data)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	if from, _ := m.Get("From"); from != Placeholder {
		out = append(out, fmt.Sprintf("From: is %q, want the placeholder %q (authorship is set by make upstream-series)", from, Placeholder))
	}
	assisted, canonical := 0, 0
	for _, l := range m.Message {
		switch {
		case identityTrailer.MatchString(l):
			out = append(out, fmt.Sprintf("carries %q: the committed series names no one; make upstream-series adds Signed-off-by", l))
		case assistedTrailer.MatchString(l):
			assisted++
			if l != AssistedBy {
				out = append(out, fmt.Sprintf("trailer %q, want exactly %q", l, AssistedBy))
			} else {
				canonical++
			}
		}
	}
	if assisted != 1 {
		out = append(out, fmt.Sprintf("%d Assisted-by trailers, want exactly one %q", assisted, AssistedBy))
	} else if canonical == 1 && !slices.Contains(m.Trailers(), AssistedBy) {
		out = append(out, fmt.Sprintf("%q is not in the trailer block at the end of the message", AssistedBy))
	}
	return out
}

// Neutralize makes a patch fit to commit: From: Placeholder, no trailer
// naming a person, and one AssistedBy trailer at the end of the message.
func Neutralize(data []byte) ([]byte, error) {
	m, err := Parse(data)
	if err != nil {
		return nil, err
	}
	m.Set("From", Placeholder)
	// Keep the trailer block's other trailers; drop the block if nothing
	// else is left in it, so AssistedBy never joins a paragraph of prose.
	start, end := m.trailerBlock()
	drop := func(l string) bool { return identityTrailer.MatchString(l) || assistedTrailer.MatchString(l) }
	var msg, kept []string
	for _, l := range m.Message[:start] {
		if !drop(l) {
			msg = append(msg, l)
		}
	}
	for _, l := range m.Message[start:end] {
		if !drop(l) {
			kept = append(kept, l)
		}
	}
	for len(msg) > 0 && strings.TrimSpace(msg[len(msg)-1]) == "" {
		msg = msg[:len(msg)-1]
	}
	if len(msg) > 0 {
		msg = append(msg, "")
	}
	m.Message = append(append(msg, kept...), AssistedBy)
	return []byte(m.String()), nil
}

// Identity is who sends the series.
type Identity struct {
	Name  string
	Email string
}

// Check refuses an empty, malformed or placeholder identity.
func (id Identity) Check() error {
	if strings.TrimSpace(id.Name) == "" || strings.TrimSpace(id.Email) == "" {
		return errors.New("no author: set AUTHOR_NAME and AUTHOR_EMAIL, or git config user.name and user.email")
	}
	a, err := mail.ParseAddress(id.Email)
	if err != nil || a.Address != id.Email {
		return fmt.Errorf("author email %q is not a plain address like jane@example.org", id.Email)
	}
	if id.String() == Placeholder || reservedDomain(id.Email) {
		return fmt.Errorf("author %q is the placeholder or has an address in a domain reserved for examples (RFC 2606), which no CLA check accepts; give your own", id.String())
	}
	if strings.ContainsAny(id.Name, "<>\n") {
		return fmt.Errorf("author name %q contains <, > or a newline", id.Name)
	}
	return nil
}

// reservedDomain reports whether email's domain is one RFC 2606 reserves:
// made up for a placeholder, never a person's.
func reservedDomain(email string) bool {
	_, domain, _ := strings.Cut(strings.ToLower(email), "@")
	return slices.ContainsFunc([]string{"example", "invalid", "test", "localhost", "example.com", "example.net", "example.org"}, func(d string) bool {
		return domain == d || strings.HasSuffix(domain, "."+d)
	})
}

// String is "Name <email>", as in a Signed-off-by trailer.
func (id Identity) String() string { return id.Name + " <" + id.Email + ">" }

// phrase matches a name that needs no quoting in a mail header (RFC 5322
// atext words), as git format-patch writes it.
var phrase = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+( [A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")

// header is the From: value: the plain name when it can stand unquoted,
// else as net/mail writes it.
func (id Identity) header() string {
	if phrase.MatchString(id.Name) {
		return id.Name + " <" + id.Email + ">"
	}
	return (&mail.Address{Name: id.Name, Address: id.Email}).String()
}

var subjectPrefix = regexp.MustCompile(`^\[PATCH[^\]]*\]\s*`)

// Author rewrites a neutral committed patch (Problems) for sending as patch
// n of total: From: id, the subject [PATCH n/total] ([PATCH] when alone),
// and "Signed-off-by: id" after AssistedBy.
func Author(data []byte, id Identity, n, total int) ([]byte, error) {
	if err := id.Check(); err != nil {
		return nil, err
	}
	if p := Problems(data); len(p) > 0 {
		return nil, fmt.Errorf("not a neutral committed patch: %s", strings.Join(p, "; "))
	}
	m, err := Parse(data)
	if err != nil {
		return nil, err
	}
	m.Set("From", id.header())
	subject, ok := m.Get("Subject")
	if !ok {
		return nil, errors.New("mail has no Subject:")
	}
	prefix := "[PATCH]"
	if total > 1 {
		w := len(fmt.Sprint(total))
		prefix = fmt.Sprintf("[PATCH %0*d/%d]", w, n, total)
	}
	m.Set("Subject", prefix+" "+subjectPrefix.ReplaceAllString(subject, ""))
	m.setTrailers(append(m.Trailers(), "Signed-off-by: "+id.String()))
	if !utf8.ValidString(id.Name) {
		return nil, fmt.Errorf("author name %q is not UTF-8", id.Name)
	}
	if strings.IndexFunc(id.Name, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0 {
		// The body now holds UTF-8: say so, as format-patch does.
		if _, ok := m.Get("Content-Type"); !ok {
			m.Set("MIME-Version", "1.0")
			m.Set("Content-Type", mime.FormatMediaType("text/plain", map[string]string{"charset": "UTF-8"}))
			m.Set("Content-Transfer-Encoding", "8bit")
		}
	}
	return []byte(m.String()), nil
}

// FileChange is one file a patch touches.
type FileChange struct {
	Path    string // the path after the patch (before, for a deletion)
	Added   bool
	Deleted bool
}

// Files lists the files a patch's diff touches, in order.
func Files(data []byte) []FileChange {
	var out []FileChange
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			_, b, ok := strings.Cut(strings.TrimPrefix(l, "diff --git "), " b/")
			if !ok {
				continue
			}
			out = append(out, FileChange{Path: b})
		case len(out) > 0 && strings.HasPrefix(l, "new file mode "):
			out[len(out)-1].Added = true
		case len(out) > 0 && strings.HasPrefix(l, "deleted file mode "):
			out[len(out)-1].Deleted = true
		}
	}
	return out
}

// NumberedName renames a format-patch file for position n: "0007-x.patch"
// is "0002-x.patch" for n = 2.
func NumberedName(name string, n int) string {
	rest := strings.TrimLeft(name, "0123456789")
	if rest == name || !strings.HasPrefix(rest, "-") {
		rest = "-" + name
	}
	return fmt.Sprintf("%04d%s", n, rest)
}
