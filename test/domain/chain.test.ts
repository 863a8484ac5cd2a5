/**
 * src/domain/chain.ts: which ends fire a link (`finished` = succeeded, failed or expired), the cycle a `then` would
 * close (checked against a brute-force search of every simple path), and what a chained run's request carries: the
 * upstream headers, and `upstream` in a JSON object payload (or none), never in any other payload.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ChainUpstream, describeCycle, findCycle, linkFires, payloadWithUpstream, upstreamHeaders } from '../../src/domain/chain.ts';

describe('linkFires', () => {
  it.each([
    ['succeeded', 'succeeded', true],
    ['succeeded', 'failed', false],
    ['succeeded', 'expired', false],
    ['failed', 'failed', true],
    ['failed', 'succeeded', false],
    ['failed', 'expired', false],
    ['finished', 'succeeded', true],
    ['finished', 'failed', true],
    ['finished', 'expired', true],
    ['finished', 'retrying', false],
    ['finished', 'running', false],
    ['finished', 'skipped', false],
    ['finished', 'canceled', false],
  ] as const)('on %s, a run ended %s: %s', (on, status, fires) => {
    expect(linkFires(on, status)).toBe(fires);
  });
});

describe('findCycle', () => {
  const graph = (edges: Record<string, string[]>) => (id: string) => edges[id] ?? [];

  it('finds a link to itself, a two-job cycle and a longer one, naming it from the job that starts it', () => {
    expect(findCycle('a', ['a'], graph({}))).toEqual(['a', 'a']);
    expect(findCycle('a', ['b'], graph({ b: ['a'] }))).toEqual(['a', 'b', 'a']);
    expect(findCycle('a', ['x', 'b'], graph({ b: ['c'], c: ['d'], d: ['b'] }))).toEqual(['b', 'c', 'd', 'b']);
  });

  it("uses the changed job's new links, not its stored ones", () => {
    // a's stored links said a → b; the change makes it a → c, and b → a no longer closes anything.
    expect(findCycle('a', ['c'], graph({ a: ['b'], b: ['a'] }))).toBeNull();
  });

  it('accepts a diamond (two paths to one job) and a long chain without a cycle', () => {
    expect(findCycle('a', ['b', 'c'], graph({ b: ['d'], c: ['d'], d: [] }))).toBeNull();
    const long: Record<string, string[]> = {};
    for (let i = 0; i < 50_000; i++) long[`j${i}`] = [`j${i + 1}`];
    expect(findCycle('start', ['j0'], graph(long))).toBeNull();
    long.j49999 = ['start'];
    expect(findCycle('start', ['j0'], graph(long))).toHaveLength(50_002);
  });

  it('agrees with a search of every simple path on random graphs', () => {
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const edges = fc.dictionary(fc.constantFrom(...ids), fc.uniqueArray(fc.constantFrom(...ids), { maxLength: 3 }));
    fc.assert(
      fc.property(edges, fc.uniqueArray(fc.constantFrom(...ids), { maxLength: 3 }), (stored, links) => {
        const linksOf = (id: string) => (id === 'a' ? links : (stored[id] ?? []));
        // Brute force: is a job reachable from a whose links lead back to a job on the path?
        const cyclic = (path: string[]): boolean =>
          linksOf(path[path.length - 1]!).some((to) => path.includes(to) || cyclic([...path, to]));
        const found = findCycle('a', links, (id) => stored[id] ?? []);
        expect(found !== null).toBe(cyclic(['a']));
        if (found) {
          // A real cycle: it starts and ends at one job, and each step is a link.
          expect(found[0]).toBe(found[found.length - 1]);
          for (let i = 0; i + 1 < found.length; i++) expect(linksOf(found[i]!)).toContain(found[i + 1]);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('words a cycle by job names, ids for jobs without one', () => {
    const names: Record<string, string | null> = { a: 'export', b: null };
    expect(describeCycle(['a', 'b', 'a'], (id) => names[id])).toBe('export → b → export');
  });
});

describe("a chained run's request", () => {
  const upstream: ChainUpstream = {
    jobId: 'j1',
    runId: 'r1',
    status: 'succeeded',
    output: { rows: 3 },
    chain: ['j0', 'j1'],
  };
  const sent = { jobId: 'j1', runId: 'r1', status: 'succeeded', output: { rows: 3 } };

  it('a JSON object payload gains upstream (its own field of that name replaced); none becomes { upstream }', () => {
    expect(payloadWithUpstream({ a: 1, upstream: 'mine' }, upstream)).toEqual({ a: 1, upstream: sent });
    expect(payloadWithUpstream(null, upstream)).toEqual({ upstream: sent });
    expect(payloadWithUpstream(undefined, upstream)).toEqual({ upstream: sent });
  });

  it('any other payload is sent unchanged', () => {
    for (const p of [[1, 2], 'text', 42, true]) expect(payloadWithUpstream(p, upstream)).toBe(p);
  });

  it('leaves out output when the upstream reported none, and never sends the chain', () => {
    const { output: _o, ...withoutOutput } = upstream;
    expect(payloadWithUpstream({}, withoutOutput)).toEqual({ upstream: { jobId: 'j1', runId: 'r1', status: 'succeeded' } });
  });

  it('carries the three upstream headers', () => {
    expect(upstreamHeaders(upstream)).toEqual({
      'chime-upstream-job-id': 'j1',
      'chime-upstream-run-id': 'r1',
      'chime-upstream-status': 'succeeded',
    });
  });
});
