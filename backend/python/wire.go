package python

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
)

// The messages between the server and a stub (stub/stub.py is the other
// side). Each is a 4-byte little-endian length and a JSON object with an
// "op"; tensor bytes are in shared memory, messages only say where.
//
// Server → stub, command socket (read by the stub's main thread):
//
//	init      {args, path, model_dir, auto_complete, shm_growth, shm_limit}
//	          → ok {config?, is_ready?} | error {msg}
//	execute   {id, flags, requests: [{rid, corr, flags, timeout, params, outputs, inputs}]}
//	          → done {id, responses: [response|null], fail?}
//	finalize  {} → ok, then the stub exits
//
// Stub → server, same socket, in order: the replies above and
//
//	send       {batch, req, final, response?}   a response sender's response
//	bls        {call, model, version, rid, flags, timeout, corr|corr_s, params,
//	            outputs, decoupled, batch?, inputs}
//	bls_cancel {call}
//	log        {level, msg, file, line}
//	family {call, name, help, kind}, metric {call, family, labels, buckets},
//	metric_value {call, id}, metric_op {id, what, value},
//	family_close {id}, metric_close {id}
//	ready      {call, ready | error}             answer to an is_ready call
//
// Server → stub, reply socket (read by a stub thread):
//
//	reply {call, error?, outputs?, block?, final?, params?, id?, value?}
//	ready {call}                                 run the model's is_ready
//
// A response is {outputs?: [tensor], error?: {msg, code}, params?}; a tensor
// is {n: name, t: data type, s: shape, o: offset of its bytes, b: byte count}.

// maxMessage bounds one message (the stub's JSON); tensors are not in it.
const maxMessage = 64 << 20

type wireTensor struct {
	Name  string  `json:"n"`
	Type  string  `json:"t"`
	Shape []int64 `json:"s"`
	Off   int64   `json:"o"`
	Bytes int64   `json:"b"`
}

type wireError struct {
	Msg  string `json:"msg"`
	Code int    `json:"code"`
}

type wireResponse struct {
	Outputs []wireTensor   `json:"outputs,omitempty"`
	Error   *wireError     `json:"error,omitempty"`
	Params  map[string]any `json:"params,omitempty"`
}

type initMsg struct {
	Op           string            `json:"op"`
	Args         map[string]string `json:"args"`
	Path         string            `json:"path"`
	ModelDir     string            `json:"model_dir"`
	AutoComplete bool              `json:"auto_complete,omitempty"`
	ShmGrowth    int64             `json:"shm_growth"`
	ShmLimit     int64             `json:"shm_limit"`
}

type executeMsg struct {
	Op       string        `json:"op"`
	ID       uint64        `json:"id"`
	Flags    int64         `json:"flags"`
	Requests []wireRequest `json:"requests"`
}

type wireRequest struct {
	ID      string         `json:"rid,omitempty"`
	Corr    any            `json:"corr,omitempty"`
	Flags   uint32         `json:"flags,omitempty"`
	Timeout int64          `json:"timeout,omitempty"`
	Params  map[string]any `json:"params,omitempty"`
	Outputs []string       `json:"outputs"`
	Inputs  []wireTensor   `json:"inputs"`
}

// replyMsg is a message on the reply socket.
type replyMsg struct {
	Op      string         `json:"op"`
	Call    uint64         `json:"call"`
	Error   *wireError     `json:"error,omitempty"`
	Outputs []wireTensor   `json:"outputs,omitempty"`
	Block   *int64         `json:"block,omitempty"`
	Final   bool           `json:"final,omitempty"`
	Params  map[string]any `json:"params,omitempty"`
	ID      uint64         `json:"id,omitempty"`
	Value   *float64       `json:"value,omitempty"`
}

// stubMsg is any message from a stub (the union of their fields).
type stubMsg struct {
	Op string `json:"op"`

	Msg     string `json:"msg"`      // error
	Config  string `json:"config"`   // ok (auto-complete)
	IsReady bool   `json:"is_ready"` // ok (init)

	ID        uint64          `json:"id"` // done; metric ids
	Responses []*wireResponse `json:"responses"`
	Fail      *string         `json:"fail"`

	Batch    *uint64       `json:"batch"` // send, bls
	Req      int           `json:"req"`
	Final    bool          `json:"final"`
	Response *wireResponse `json:"response"`

	Call      uint64         `json:"call"` // bls, calls
	Model     string         `json:"model"`
	Version   int64          `json:"version"`
	RID       string         `json:"rid"`
	Flags     uint32         `json:"flags"`
	Timeout   int64          `json:"timeout"`
	Corr      uint64         `json:"corr"`
	CorrS     string         `json:"corr_s"`
	Params    map[string]any `json:"params"`
	Outputs   []string       `json:"outputs"`
	Decoupled bool           `json:"decoupled"`
	Inputs    []wireTensor   `json:"inputs"`

	Level int    `json:"level"` // log
	File  string `json:"file"`
	Line  int    `json:"line"`

	Name    string            `json:"name"` // metrics
	Help    string            `json:"help"`
	Kind    int               `json:"kind"`
	Family  uint64            `json:"family"`
	Labels  map[string]string `json:"labels"`
	Buckets []float64         `json:"buckets"`
	What    string            `json:"what"`
	Value   float64           `json:"value"`

	Ready *bool      `json:"ready"` // ready
	Error *wireError `json:"error"`
}

// conn writes messages to a socket from any goroutine, one at a time.
type conn struct {
	c  net.Conn
	mu sync.Mutex
	// mu protects buf.
	buf []byte
}

// send writes v as one message.
func (c *conn) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a message for the stub: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = binary.LittleEndian.AppendUint32(c.buf[:0], uint32(len(data)))
	c.buf = append(c.buf, data...)
	_, err = c.c.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	return err
}

// readMsg reads one message from a stub into m (reset first).
func readMsg(r *bufio.Reader, buf *[]byte, m *stubMsg) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > maxMessage {
		return fmt.Errorf("the stub sent a message of %d bytes (at most %d)", n, maxMessage)
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	*m = stubMsg{}
	if err := json.Unmarshal(b, m); err != nil {
		return fmt.Errorf("the stub sent a message that is not valid: %w", err)
	}
	return nil
}
