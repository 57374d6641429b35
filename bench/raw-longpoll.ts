// The raw limit for bench:fanout: a bare node:http server that parks every GET it receives and,
// when told (POST /answer), answers all of them at once with the same body, in one turn of its
// event loop; GETs that come later are answered at once (as a poll on a queue that already
// holds its event), until POST /park starts another round. No authentication, no Redis, no
// formatting: what one Node process on this machine needs to answer that many parked requests
// (a write system call each, and the client's reads), measured by the same client code as the
// events replica. Run by bench/fanout.ts in a process of its own (as the replica is); prints
// its port on stdout.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const parked: ServerResponse[] = [];
let answering = false;
/** The answer's body: set to a real answer of the events replica (PUT /body), so that both
 * write the same bytes. */
let body = '{"result":"success","msg":"","events":[]}';

function answer(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
}

const server = createServer((req, res) => {
  if (req.method === 'PUT' && req.url === '/body') {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      body = Buffer.concat(chunks).toString('utf8');
      res.end();
    });
    return;
  }
  if (req.method === 'POST' && req.url === '/park') {
    answering = false;
    res.end();
    return;
  }
  if (req.method === 'POST' && req.url === '/answer') {
    answering = true;
    res.end();
    for (const waiting of parked.splice(0)) answer(waiting);
    return;
  }
  if (answering) answer(res);
  else parked.push(res);
});
// As the events replica's (packages/http serve.ts).
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
