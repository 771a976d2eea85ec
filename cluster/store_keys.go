package cluster

import "github.com/toolscope/toolscope/cluster/internal/kvkey"

// MaxIDBytes bounds a tree id and a call id, in bytes. Ids are user data; the store encodes
// them into subject tokens, and NATS bounds a subject's length.
const MaxIDBytes = kvkey.MaxIDBytes

// ErrInvalidID: a tree id or call id the store cannot take (empty, longer than MaxIDBytes, or
// not UTF-8). The wrapped error names which id and why.
var ErrInvalidID = kvkey.ErrInvalidID

// keyToken encodes an id as a KV key token (unpadded base64url: see kvkey.Token).
var keyToken = kvkey.Token
