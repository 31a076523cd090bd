// A Server-Sent Events parser for fetch() bodies (EventSource cannot POST or
// set headers). It follows the WHATWG event-stream rules: lines end with
// CRLF, LF or CR; "data" lines join with "\n"; ":" starts a comment; a blank
// line dispatches; an event cut off by the end of the stream is dropped.

export class SSEParser {
  constructor() {
    this.buf = '';
    this.skipLF = false; // the last chunk ended with CR: a leading LF ends nothing
    this.reset();
  }

  reset() {
    this.data = [];
    this.event = '';
    this.id = null;
  }

  // push feeds decoded text and returns the events it completed.
  push(text) {
    if (this.skipLF && text.startsWith('\n')) text = text.slice(1);
    this.skipLF = false;
    this.buf += text;
    const out = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      // A CR at the very end may be the first half of a CRLF.
      if (m[0] === '\r' && this.buf === '') this.skipLF = true;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  line(line) {
    if (line === '') {
      if (this.data.length === 0 && !this.event) {
        this.reset();
        return null;
      }
      const ev = { id: this.id, event: this.event || 'message', data: this.data.join('\n') };
      this.reset();
      return ev;
    }
    if (line.startsWith(':')) return null;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data': this.data.push(value); break;
      case 'event': this.event = value; break;
      case 'id': if (!value.includes('\0')) this.id = value; break;
      default: break; // "retry" and unknown fields are ignored
    }
    return null;
  }
}

// events yields the events of a fetch() response body as they arrive.
export async function* events(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const p = new SSEParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const ev of p.push(value)) yield ev;
    }
  } finally {
    reader.releaseLock();
  }
}
