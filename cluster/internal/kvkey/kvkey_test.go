package kvkey

import (
	"errors"
	"strings"
	"testing"
)

func TestToken_Refuses(t *testing.T) {
	for _, id := range []string{"", strings.Repeat("x", MaxIDBytes+1), "a\xff"} {
		if _, err := Token("call", id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Token(%q) error = %v, want ErrInvalidID", id, err)
		}
	}
	if _, err := ID("not base64!"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("ID of a bad token: %v, want ErrInvalidID", err)
	}
}

func FuzzKeyToken(f *testing.F) {
	for _, s := range []string{"a", "a.b", "*", ">", " ", "日本", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		tok, err := Token("call", id)
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("error %v is not ErrInvalidID", err)
			}
			return
		}
		for _, r := range tok {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				t.Fatalf("token %q of %q has %q, not a plain subject token character", tok, id, r)
			}
		}
		back, err := ID(tok)
		if err != nil || back != id {
			t.Fatalf("ID(Token(%q)) = %q, %v", id, back, err)
		}
	})
}
