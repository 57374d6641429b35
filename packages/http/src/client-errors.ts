// Requests Node's HTTP parser refuses before any route sees them get the Zulip envelope too:
// a request line or headers past Node's 16 KiB limit (a GET whose query string holds a huge
// value), malformed HTTP, a request that took too long to arrive. Node's own answer to these
// has no body, so a client looking for `result` and `msg` found nothing to read.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

type Answer = [status: number, reason: string, msg: string];

const ANSWERS: Record<string, Answer> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'Request header fields too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Payload Too Large', 'Chunk extensions too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'Request timeout'],
};
const MALFORMED: Answer = [400, 'Bad Request', 'Malformed HTTP request'];

/** After the answer the rest of the request is still read, and dropped, for this long and up
 * to this much: closing a socket with unread input resets the connection, and a client still
 * sending its oversized request would get that reset instead of the answer. */
const LINGER_MS = 2_000;
const LINGER_BYTES = 4 * 1024 * 1024;

/** Sockets answered here: Node's parser reports an error again for input that follows. */
const answered = new WeakSet<Socket>();

export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (answered.has(socket)) return;
    // With an earlier request of the connection still unanswered (a parked long-poll, a
    // pipelined request), an answer written now would be read as that request's: the
    // connection is closed unanswered instead.
    const inProgress = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inProgress) return void socket.destroy();
    answered.add(socket);
    const [status, reason, msg] = ANSWERS[error.code ?? ''] ?? MALFORMED;
    const body = JSON.stringify({ result: 'error', msg, code: 'BAD_REQUEST' });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    let unread = LINGER_BYTES;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.on('close', () => clearTimeout(timer));
    socket.on('data', (chunk: Buffer) => {
      unread -= chunk.length;
      if (unread < 0) socket.destroy();
    });
    socket.resume();
  });
}
