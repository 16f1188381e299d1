package python

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// The messages between the server and a stub (stub/stub.py is the other
// side). Each is a 4-byte little-endian length and, in Python's marshal
// format (marshal.go), a dict with an "op" or, for execute and its answer
// (the hot path: no keys to build), a list; tensor bytes are in shared
// memory, messages only say where.
//
// Server → stub, command pipe (read by the stub's main thread; the
// answers come back on the answer pipe, read by the goroutine that sent
// the command):
//
//	init      {args, path, model_dir, auto_complete, shm_growth, shm_limit}
//	          → ok {config?, is_ready?} | error {msg}
//	execute   ["execute", id, flags, [[rid, corr, flags, timeout, params|None, outputs, inputs]]]
//	          → ("done", id, seq, block|None, fail|None, [response|None] | None, [rescheduled]|None, held, [freed]|None)
//	finalize  {} → ok, then the stub exits
//
// seq counts the events the stub sent before the answer: the server
// handles them before the answer's batch is complete. block is the one
// block holding the outputs of all of done's responses. held says that
// the model still holds some of the batch's inputs (a request, a tensor or
// an array over them, kept for later): the batch's block then stays the
// stub's until the stub says it freed them, in the freed list of a later
// answer (freed during that execute, so before the server writes the next
// batch's inputs) or in a "freed" event (freed on another thread).
//
// Stub → server, event socket (read by the proc's reader goroutine):
//
//	send       {batch, req, final, response?}   a response sender's response
//	dropped    {batch, req}                     a request freed with no final response
//	freed      {batch}                          the model freed the last of a held batch's inputs
//	bls        {call, model, version, rid, flags, timeout, corr|corr_s, params,
//	            outputs, decoupled, batch?, inputs}
//	bls_cancel {call}
//	log        {level, msg, file, line}
//	family {call, name, help, kind}, metric {call, family, labels, buckets},
//	metric_value {call, id}, metric_op {id, what, value},
//	family_close {id}, metric_close {id}
//	ready      {call, ready | error}             answer to an is_ready call
//
// Server → stub, event socket (read by a stub thread):
//
//	reply {call, error?, outputs?, block?, final?, params?, id?, value?}
//	ready {call}                                 run the model's is_ready
//
// A response is (outputs|None, (message, code)|None, params|None); a
// tensor is [name, data type, shape, offset of its bytes, byte count]. The
// tensors of one response (or one BLS request) are in one block of shared
// memory, the first at its start.

// maxMessage bounds one message; tensors are not in it.
const maxMessage = 64 << 20

// message is what the server sends.
type message interface{ encode(e *enc) }

type wireTensor struct {
	Name  string
	Type  string
	Shape []int64
	Off   int64
	Bytes int64
	Down  bool // an output of the stub that lies in the server's region (a view of an input), not in its own
}

// encode writes the tensor as a list: name, data type, shape, offset,
// byte count.
func (t *wireTensor) encode(e *enc) {
	e.list(5)
	e.str(t.Name)
	e.str(t.Type)
	e.ints(t.Shape)
	e.integer(t.Off)
	e.integer(t.Bytes)
}

func encodeTensors(e *enc, ts []wireTensor) {
	e.list(len(ts))
	for i := range ts {
		ts[i].encode(e)
	}
}

type wireError struct {
	Msg  string
	Code int
}

type wireResponse struct {
	Outputs []wireTensor
	Error   *wireError
	Params  map[string]any
}

// opMsg is a message with nothing but its op.
type opMsg string

func (m opMsg) encode(e *enc) {
	e.dict()
	e.key("op")
	e.str(string(m))
	e.end()
}

type initMsg struct {
	Args         map[string]string
	Path         string
	ModelDir     string
	BackendDir   string // a Python-based backend's folder: model.py is its, imported as module "model"
	AutoComplete bool
	ShmGrowth    int64
	ShmLimit     int64
	SendWindow   int // responses a decoupled request's sender may send ahead of the server's credits
}

func (m *initMsg) encode(e *enc) {
	e.dict()
	e.key("op")
	e.str("init")
	e.key("args")
	e.value(m.Args)
	e.key("path")
	e.str(m.Path)
	e.key("model_dir")
	e.str(m.ModelDir)
	e.key("backend_dir")
	e.str(m.BackendDir)
	e.key("auto_complete")
	e.boolean(m.AutoComplete)
	e.key("shm_growth")
	e.integer(m.ShmGrowth)
	e.key("shm_limit")
	e.integer(m.ShmLimit)
	e.key("send_window")
	e.integer(int64(m.SendWindow))
	e.end()
}

// creditMsg gives a decoupled request's response sender back n credits
// (the server handed n of its responses on).
type creditMsg struct {
	Batch uint64
	Req   int
	N     int
}

func (m *creditMsg) encode(e *enc) {
	e.dict()
	e.key("op")
	e.str("credit")
	e.key("batch")
	e.unsigned(m.Batch)
	e.key("req")
	e.integer(int64(m.Req))
	e.key("n")
	e.integer(int64(m.N))
	e.end()
}

type executeMsg struct {
	ID       uint64
	Flags    int64
	Requests []wireRequest
}

type wireRequest struct {
	ID      string
	Corr    any // uint64 or string
	Flags   uint32
	Timeout int64
	Params  map[string]any
	Outputs []string
	Inputs  []wireTensor
}

// encode writes the command as a list, ["execute", id, flags, requests],
// each request [rid, corr, flags, timeout, params, outputs, inputs]: no
// dict keys to build and hash on the stub's hot path.
func (m *executeMsg) encode(e *enc) {
	e.list(4)
	e.str("execute")
	e.unsigned(m.ID)
	e.integer(m.Flags)
	e.list(len(m.Requests))
	for i := range m.Requests {
		r := &m.Requests[i]
		e.list(7)
		e.str(r.ID)
		if r.Corr != nil {
			e.value(r.Corr)
		} else {
			e.integer(0)
		}
		e.integer(int64(r.Flags))
		e.integer(r.Timeout)
		if len(r.Params) > 0 {
			e.value(r.Params)
		} else {
			e.none()
		}
		e.strs(r.Outputs)
		encodeTensors(e, r.Inputs)
	}
}

// replyMsg is a message on the event socket.
type replyMsg struct {
	Op      string
	Call    uint64
	Error   *wireError
	Outputs []wireTensor
	Block   *int64
	Final   bool
	Params  map[string]any // a BLS response's parameters
	ID      uint64
	Value   *float64
	Ready   bool // a model-control call: the model is ready
}

func (m *replyMsg) encode(e *enc) {
	e.dict()
	e.key("op")
	e.str(m.Op)
	e.key("call")
	e.unsigned(m.Call)
	if m.Error != nil {
		e.key("error")
		e.dict()
		e.key("msg")
		e.str(m.Error.Msg)
		e.key("code")
		e.integer(int64(m.Error.Code))
		e.end()
	}
	if m.Outputs != nil {
		e.key("outputs")
		encodeTensors(e, m.Outputs)
	}
	if m.Block != nil {
		e.key("block")
		e.integer(*m.Block)
	}
	if m.Final {
		e.key("final")
		e.boolean(true)
	}
	if len(m.Params) > 0 {
		e.key("params")
		e.value(m.Params)
	}
	if m.ID != 0 {
		e.key("id")
		e.unsigned(m.ID)
	}
	if m.Value != nil {
		e.key("value")
		e.float(*m.Value)
	}
	if m.Ready {
		e.key("ready")
		e.boolean(true)
	}
	e.end()
}

// stubMsg is any message from a stub (the union of their fields).
type stubMsg struct {
	Op string

	Msg     string // error
	Config  string // ok (auto-complete)
	IsReady bool   // ok (init)

	ID        uint64 // done; metric ids
	Responses []*wireResponse
	Fail      *string
	Seq       uint64
	Block     *int64   // done: the one block of every response's outputs
	Resched   []int    // done: the requests the model rescheduled
	Held      bool     // done: the model still holds some of the batch's inputs ("freed" comes when it no longer does)
	Freed     []uint64 // done: held batches whose last input the model freed during this execute

	Batch    *uint64 // send, bls
	Req      int
	N        int // bls_credit
	Final    bool
	Response *wireResponse

	Call      uint64 // bls, calls
	Model     string
	Version   int64
	RID       string
	Flags     uint32
	Timeout   int64
	Corr      uint64
	CorrS     string
	Params    map[string]any
	Outputs   []string
	Decoupled bool
	Inputs    []wireTensor

	Level int // log
	File  string
	Line  int

	Name    string // metrics
	Help    string
	Kind    int
	Family  uint64
	Labels  map[string]string
	Buckets []float64
	What    string
	Value   float64

	Ready *bool // ready
	Error *wireError

	Files      map[string][]byte // control (load_model); Config, Model, Version, What
	Dependents bool              // control (unload_model)
}

// decode reads a stub's message.
func (m *stubMsg) decode(d *dec) error {
	if c := d.peek(); c == mList || c == mTuple {
		return m.decodeDone(d)
	}
	if c, err := d.next(); err != nil {
		return err
	} else if c != mDict {
		return fmt.Errorf("a message is a dict, not marshal type %q", c)
	}
	return d.each(func(k string) error {
		var err error
		var n int64
		switch k {
		case "op":
			m.Op, err = d.str()
		case "msg":
			m.Msg, err = d.str()
		case "config":
			m.Config, err = d.str()
		case "is_ready":
			m.IsReady, err = d.boolean()
		case "id":
			n, err = d.integer()
			m.ID = uint64(n)
		case "batch":
			n, err = d.integer()
			b := uint64(n)
			m.Batch = &b
		case "req":
			n, err = d.integer()
			m.Req = int(n)
		case "n":
			n, err = d.integer()
			m.N = int(n)
		case "final":
			m.Final, err = d.boolean()
		case "response":
			m.Response = new(wireResponse)
			err = m.Response.decode(d)
		case "call":
			n, err = d.integer()
			m.Call = uint64(n)
		case "model":
			m.Model, err = d.str()
		case "version":
			m.Version, err = d.integer()
		case "rid":
			m.RID, err = d.str()
		case "flags":
			n, err = d.integer()
			m.Flags = uint32(n)
		case "timeout":
			m.Timeout, err = d.integer()
		case "corr":
			n, err = d.integer()
			m.Corr = uint64(n)
		case "corr_s":
			m.CorrS, err = d.str()
		case "params":
			m.Params, err = d.params()
		case "outputs":
			err = d.items(func(int) error {
				s, err := d.str()
				m.Outputs = append(m.Outputs, s)
				return err
			})
		case "decoupled":
			m.Decoupled, err = d.boolean()
		case "inputs":
			m.Inputs, err = d.tensors()
		case "level":
			n, err = d.integer()
			m.Level = int(n)
		case "file":
			m.File, err = d.str()
		case "line":
			n, err = d.integer()
			m.Line = int(n)
		case "name":
			m.Name, err = d.str()
		case "help":
			m.Help, err = d.str()
		case "kind":
			n, err = d.integer()
			m.Kind = int(n)
		case "family":
			n, err = d.integer()
			m.Family = uint64(n)
		case "labels":
			m.Labels = map[string]string{}
			if d.none() {
				break
			}
			if _, err = d.next(); err == nil {
				err = d.each(func(k string) error {
					v, err := d.str()
					m.Labels[k] = v
					return err
				})
			}
		case "buckets":
			m.Buckets = []float64{}
			if d.none() {
				m.Buckets = nil
				break
			}
			err = d.items(func(int) error {
				f, err := d.number()
				m.Buckets = append(m.Buckets, f)
				return err
			})
		case "what":
			m.What, err = d.str()
		case "value":
			m.Value, err = d.number()
		case "ready":
			var b bool
			b, err = d.boolean()
			m.Ready = &b
		case "error":
			m.Error, err = d.wireError()
		case "files":
			m.Files = map[string][]byte{}
			var c byte
			if c, err = d.next(); err == nil && c != mDict {
				err = fmt.Errorf("want a dict, have marshal type %q", c)
			}
			if err == nil {
				err = d.each(func(k string) error {
					v, err := d.str()
					m.Files[k] = []byte(v)
					return err
				})
			}
		case "dependents":
			m.Dependents, err = d.boolean()
		default:
			_, err = d.value()
		}
		return err
	})
}

// decodeDone reads the answer to an execute command, ("done", id, seq,
// block, fail, responses, rescheduled, held, freed): block and fail may be None,
// responses is None for a decoupled model, and each response None when
// its request's response sender answered it (or it was rescheduled);
// rescheduled, the indices of the requests the model rescheduled, may be
// None.
func (m *stubMsg) decodeDone(d *dec) error {
	return d.items(func(i int) error {
		var err error
		var n int64
		switch i {
		case 0:
			m.Op, err = d.str()
		case 1:
			n, err = d.integer()
			m.ID = uint64(n)
		case 2:
			n, err = d.integer()
			m.Seq = uint64(n)
		case 3:
			if d.none() {
				break
			}
			var b int64
			b, err = d.integer()
			m.Block = &b
		case 4:
			if d.none() {
				break
			}
			var s string
			s, err = d.str()
			m.Fail = &s
		case 5:
			err = d.items(func(int) error {
				if d.none() {
					m.Responses = append(m.Responses, nil)
					return nil
				}
				r := new(wireResponse)
				m.Responses = append(m.Responses, r)
				return r.decode(d)
			})
		case 6:
			m.Resched, err = intList[int](d)
		case 7:
			m.Held, err = d.boolean()
		case 8:
			m.Freed, err = intList[uint64](d)
		default:
			_, err = d.value()
		}
		return err
	})
}

// intList reads None (nil) or a list of integers.
func intList[T ~int | ~uint64](d *dec) ([]T, error) {
	if d.none() {
		return nil, nil
	}
	var out []T
	err := d.items(func(int) error {
		n, err := d.integer()
		out = append(out, T(n))
		return err
	})
	return out, err
}

// decode reads a response, (outputs, error, params), each may be None;
// error is (message, code).
func (r *wireResponse) decode(d *dec) error {
	return d.items(func(i int) error {
		var err error
		switch i {
		case 0:
			r.Outputs, err = d.tensors()
		case 1:
			if d.none() {
				break
			}
			r.Error, err = d.wireError()
		case 2:
			r.Params, err = d.params()
		default:
			_, err = d.value()
		}
		return err
	})
}

// wireError reads an error: (message, code) in a response, {msg, code}
// in the answer to an is_ready call.
func (d *dec) wireError() (*wireError, error) {
	e := new(wireError)
	if c := d.peek(); c == mList || c == mTuple {
		return e, d.items(func(i int) error {
			var err error
			switch i {
			case 0:
				e.Msg, err = d.str()
			case 1:
				var n int64
				n, err = d.integer()
				e.Code = int(n)
			default:
				_, err = d.value()
			}
			return err
		})
	}
	if c, err := d.next(); err != nil {
		return nil, err
	} else if c != mDict {
		return nil, fmt.Errorf("an error is a dict or a tuple, not marshal type %q", c)
	}
	return e, d.each(func(k string) error {
		var err error
		switch k {
		case "msg":
			e.Msg, err = d.str()
		case "code":
			var n int64
			n, err = d.integer()
			e.Code = int(n)
		default:
			_, err = d.value()
		}
		return err
	})
}

func (d *dec) params() (map[string]any, error) {
	v, err := d.value()
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parameters are a dict, not %T", v)
	}
	return m, nil
}

func (d *dec) tensors() ([]wireTensor, error) {
	var ts []wireTensor
	err := d.sized(func(n int) { ts = make([]wireTensor, 0, n) }, func(int) error {
		var t wireTensor
		err := d.items(func(i int) error {
			var err error
			switch i {
			case 0:
				t.Name, err = d.str()
			case 1:
				t.Type, err = d.dtype()
			case 2:
				err = d.sized(func(n int) { t.Shape = make([]int64, 0, n) }, func(int) error {
					n, err := d.integer()
					t.Shape = append(t.Shape, n)
					return err
				})
			case 3:
				t.Off, err = d.integer()
			case 4:
				t.Bytes, err = d.integer()
			case 5:
				t.Down, err = d.boolean()
			default:
				_, err = d.value()
			}
			return err
		})
		ts = append(ts, t)
		return err
	})
	return ts, err
}

// conn writes messages to a socket from any goroutine, one at a time.
type conn struct {
	c  io.ReadWriteCloser
	mu sync.Mutex
	// mu protects e.
	e enc
}

// send writes m as one message.
func (c *conn) send(m message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.e.b = append(c.e.b[:0], 0, 0, 0, 0)
	m.encode(&c.e)
	n := len(c.e.b) - 4
	if n > maxMessage {
		return fmt.Errorf("a message of %d bytes for the stub (at most %d)", n, maxMessage)
	}
	binary.LittleEndian.PutUint32(c.e.b, uint32(n))
	_, err := c.c.Write(c.e.b)
	if cap(c.e.b) > 1<<20 {
		c.e.b = nil
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
	if err := m.decode(&dec{b: b}); err != nil {
		return fmt.Errorf("the stub sent a message that is not valid: %w", err)
	}
	return nil
}
