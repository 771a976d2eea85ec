package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// A Browser is a headless Chromium driven over the Chrome DevTools
// Protocol on a pipe (--remote-debugging-pipe: the browser reads commands
// from its fd 3 and writes answers and events to its fd 4, each message a
// JSON object followed by a NUL byte). No port is opened and nothing but
// the standard library is needed.
type Browser struct {
	cmd     *exec.Cmd
	w       io.WriteCloser
	profile string

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	events  map[string][]func(method string, params json.RawMessage) // by session id
	done    chan struct{}
	readErr error
}

type reply struct {
	Result json.RawMessage
	Err    *cdpError
}

type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *cdpError) Error() string { return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message) }

// StartBrowser runs chromium (the path in $CHROMIUM, else "chromium" on
// $PATH) headless with a throwaway profile.
func StartBrowser() (*Browser, error) {
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "chromium"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("no Chromium: %w (apt-get install chromium, or set $CHROMIUM)", err)
	}
	profile, err := os.MkdirTemp("", "pagecheck-profile-")
	if err != nil {
		return nil, err
	}
	// Chromium's end of the pipes: it reads fd 3 and writes fd 4.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path,
		"--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--user-data-dir="+profile, "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-default-apps", "--mute-audio",
		"--allow-file-access-from-files", "about:blank")
	cmd.ExtraFiles = []*os.File{inR, outW}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if os.Getenv("PAGECHECK_BROWSER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inR.Close()
	outW.Close()
	b := &Browser{cmd: cmd, w: inW, profile: profile, pending: map[int64]chan reply{},
		events: map[string][]func(string, json.RawMessage){}, done: make(chan struct{})}
	go b.read(outR)
	// The first answer proves the pipe works.
	if _, err := b.Call("", "Browser.getVersion", nil, 30*time.Second); err != nil {
		b.Close()
		return nil, fmt.Errorf("chromium did not answer on the debugging pipe: %w", err)
	}
	return b, nil
}

func (b *Browser) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var msg []byte
		msg, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m struct {
			ID        int64           `json:"id"`
			Method    string          `json:"method"`
			Params    json.RawMessage `json:"params"`
			Result    json.RawMessage `json:"result"`
			Error     *cdpError       `json:"error"`
			SessionID string          `json:"sessionId"`
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch := b.pending[m.ID]; ch != nil {
				delete(b.pending, m.ID)
				ch <- reply{m.Result, m.Error}
			}
			b.mu.Unlock()
			continue
		}
		hs := b.events[m.SessionID]
		b.mu.Unlock()
		for _, h := range hs {
			h(m.Method, m.Params)
		}
	}
	b.mu.Lock()
	b.readErr = fmt.Errorf("debugging pipe closed: %v", err)
	for id, ch := range b.pending {
		delete(b.pending, id)
		close(ch)
	}
	b.mu.Unlock()
	close(b.done)
}

// Call sends one command (to the browser when session is "", else to that
// page session) and waits up to timeout for its result.
func (b *Browser) Call(session, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return nil, b.readErr
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	buf, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	_, err = b.w.Write(append(buf, 0))
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, b.readErr
		}
		if r.Err != nil {
			return nil, fmt.Errorf("%s: %w", method, r.Err)
		}
		return r.Result, nil
	case <-time.After(timeout):
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return nil, fmt.Errorf("%s: no answer in %s", method, timeout)
	}
}

// On registers h for the events of session.
func (b *Browser) On(session string, h func(method string, params json.RawMessage)) {
	b.mu.Lock()
	b.events[session] = append(b.events[session], h)
	b.mu.Unlock()
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() error {
	_, _ = b.Call("", "Browser.close", nil, 5*time.Second)
	b.w.Close()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	var err error
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		err = errors.New("chromium did not exit; killed")
		_ = b.cmd.Process.Kill()
		<-exited
	}
	os.RemoveAll(b.profile)
	return err
}
