/**
 * Hostile receivers (issue #30, point 3, the receiver's side): a receiver that accepts the connection and never answers,
 * never reads, or trickles its answer a byte at a time cannot hold a dispatcher's slot past the job's `timeoutMs`.
 * Checked twice: against `createDeliver` (src/dispatch/deliver.ts: one timer bounds the whole request, from waiting for a
 * connection to the last body byte; undici's own headersTimeout and bodyTimeout restart with every byte, so a trickle
 * would never trip them), where the attempt must end as a timeout within `timeoutMs` and the connection be closed; and
 * end to end, a dispatcher with one slot per destination whose good run must not wait behind two hostile ones for more
 * than their two timeouts.
 */
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { ERROR_CLASS } from '../../src/domain/attempt-outcome.ts';
import { createTestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';

/** What a hostile receiver does once a request's head has arrived (or at once, for `never-reads`). */
type Behaviour = 'never-answers' | 'never-reads' | 'trickles-head' | 'trickles-body' | 'trickles-chunks' | 'informational-forever';

/** Each byte (or chunk) of a trickle, this often. */
const TRICKLE_MS = 50;

/**
 * A raw TCP receiver on 127.0.0.1: `/ok` is answered 200 at once; any other path `/<behaviour>` is treated as that
 * behaviour says. Records when each connection was closed.
 */
async function startHostileReceiver(): Promise<{
  url: string;
  closed: { path: string; at: number }[];
  okAt: number[];
  close(): Promise<void>;
}> {
  const closed: { path: string; at: number }[] = [];
  const okAt: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let path = '?';
    let timer: NodeJS.Timeout | undefined;
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      sockets.delete(socket);
      closed.push({ path, at: Date.now() });
    });
    const trickle = (next: () => string) => {
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write(next());
      }, TRICKLE_MS);
    };
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.on('data', () => {}); // the body, and anything after, is read and dropped
      path = /^[A-Z]+ (\S+)/.exec(head)?.[1] ?? '?';
      const behaviour = path.slice(1) as Behaviour | 'ok';
      if (behaviour === 'ok') {
        okAt.push(Date.now());
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      } else if (behaviour === 'trickles-head') {
        const line = `HTTP/1.1 200 OK\r\nx-slow: ${'a'.repeat(100_000)}`;
        let i = 0;
        trickle(() => line[i++ % line.length]!);
      } else if (behaviour === 'trickles-body') {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n');
        trickle(() => 'x');
      } else if (behaviour === 'trickles-chunks') {
        socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n');
        trickle(() => '1\r\nx\r\n');
      } else if (behaviour === 'informational-forever') {
        trickle(() => 'HTTP/1.1 102 Processing\r\n\r\n');
      }
      // never-answers: nothing at all.
    };
    socket.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  // never-reads gets a server of its own that never reads a byte.
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    closed,
    okAt,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A server that accepts connections and never reads from them (paused from the start), until `listen()`: then it reads
 * and drops, so that it sees whether the client has closed the connection meanwhile.
 */
async function startDeafServer(): Promise<{ url: string; closedAt: number[]; listen(): void; close(): Promise<void> }> {
  const closedAt: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ pauseOnConnect: true }, (socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => closedAt.push(Date.now()));
    socket.on('end', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    closedAt,
    listen() {
      for (const s of sockets) s.on('data', () => {}).resume();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('hostile receivers cannot hold a slot past timeoutMs', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  });

  it('createDeliver ends each attempt as a timeout within timeoutMs and closes the connection', async () => {
    const receiver = await startHostileReceiver();
    const deaf = await startDeafServer();
    cleanup.push(
      () => receiver.close(),
      () => deaf.close(),
    );
    const agent = createCallbackAgent({ allowPrivate: true });
    cleanup.push(() => agent.close());
    const deliver = createDeliver(agent);
    const timeoutMs = 1_000;
    // Up to 64 KiB of body: more than a socket buffer takes at once, so never-reads also stalls the request's writing.
    const body = JSON.stringify({ padding: 'p'.repeat(60_000) });
    const figures: Record<string, number> = {};
    const behaviours: Behaviour[] = ['never-answers', 'trickles-head', 'trickles-body', 'trickles-chunks', 'informational-forever'];
    await Promise.all(
      [...behaviours, 'never-reads' as const].map(async (behaviour) => {
        const url = behaviour === 'never-reads' ? `${deaf.url}/never-reads` : `${receiver.url}/${behaviour}`;
        const started = Date.now();
        const result = await deliver({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, timeoutMs }, Date.now);
        const took = Date.now() - started;
        figures[behaviour] = took;
        expect(result, behaviour).toMatchObject({ kind: 'error', errorClass: ERROR_CLASS.timeout, maybeSent: true });
        expect(took, behaviour).toBeGreaterThanOrEqual(timeoutMs - 5);
        // A loaded machine's timers run late; a trickle that held on would take until the end of the test.
        expect(took, behaviour).toBeLessThan(timeoutMs + 1_000);
        // The connection is closed at the timeout: the receiver holds nothing either.
        if (behaviour === 'never-reads') deaf.listen();
        await eventually(
          () => (behaviour === 'never-reads' ? deaf.closedAt.length > 0 : receiver.closed.some((c) => c.path === `/${behaviour}`)),
          {
            timeoutMs: 2_000,
            what: `the ${behaviour} connection to be closed`,
          },
        );
      }),
    );
    console.log(`receiver-faults: attempts ended after (ms, timeoutMs ${timeoutMs}): ${JSON.stringify(figures)}`);
  });

  describe('a dispatcher with one slot per destination', () => {
    let db: FreshDatabase;
    let chime: ChimeProcess;
    afterAll(async () => {
      await chime?.stop('SIGKILL');
      await db?.drop();
    });

    it("sends the destination's good run after at most its hostile runs' timeouts", { timeout: 90_000 }, async () => {
      const receiver = await startHostileReceiver();
      cleanup.push(() => receiver.close());
      db = await freshDatabase(process.env.TEST_DATABASE_URL ? { kind: 'postgres' } : { kind: 'pglite' });
      chime = await startChime({ ...db.env, CHIME_DISPATCH_PER_DESTINATION: '1' });
      const tenant = await createTestTenant(chime.url, 'receiver-faults');
      const timeoutMs = 1_500;
      const hostile: Behaviour[] = ['never-answers', 'trickles-body', 'trickles-head'];
      // All due at the same moment, on one destination: the good one last in line at worst.
      const dueAt = new Date(Date.now() + 4_000).toISOString();
      for (const path of [...hostile, 'ok']) {
        const r = await tenant.api.post('/v1/jobs', {
          schedule: { type: 'once', at: dueAt },
          callback: { url: `${receiver.url}/${path}`, timeoutMs },
          retry: { strategy: 'fixed', maxAttempts: 1, initialDelayMs: 1000 },
        });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
      }
      await eventually(() => receiver.okAt.length > 0, { timeoutMs: 30_000, what: 'the good run to arrive' });
      const waitedMs = receiver.okAt[0]! - Date.parse(dueAt);
      console.log(
        `receiver-faults: the good run arrived ${waitedMs} ms after its due time, behind ${hostile.length} hostile runs of timeoutMs ${timeoutMs}`,
      );
      expect(waitedMs).toBeLessThan(hostile.length * timeoutMs + 2_000);
    });
  });
});
