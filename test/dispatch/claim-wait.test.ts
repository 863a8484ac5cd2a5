/**
 * `claimWaitMs` (src/dispatch/engine/claim-pacer.ts): when the dispatcher's next claim comes, given the earliest due run.
 * Lookahead 250 ms and poll 2 s, the defaults.
 */
import { describe, expect, it } from 'vitest';
import { claimWaitMs } from '../../src/dispatch/engine/claim-pacer.ts';

const o = { lookaheadMs: 250, pollMs: 2_000 };
const NOW = 1_000_000;

describe('claimWaitMs', () => {
  it('with nothing waiting, polls', () => {
    expect(claimWaitMs(null, NOW, o, true)).toBe(2_000);
  });

  it('waits until the earliest run enters the lookahead, gathering at least a fifth of it, never past the poll', () => {
    expect(claimWaitMs(NOW + 1_000, NOW, o, true)).toBe(750);
    expect(claimWaitMs(NOW + 260, NOW, o, true)).toBe(50);
    expect(claimWaitMs(NOW + 60_000, NOW, o, true)).toBe(2_000);
  });

  it('a run inside the lookahead is claimed within a fifth of it or half its remaining time', () => {
    expect(claimWaitMs(NOW + 250, NOW, o, true)).toBe(50);
    expect(claimWaitMs(NOW + 40, NOW, o, true)).toBe(20);
    expect(claimWaitMs(NOW + 1, NOW, o, false)).toBe(0);
  });

  it('a run already due is claimed at once, or after a short pause when the last claim found nothing', () => {
    expect(claimWaitMs(NOW, NOW, o, true)).toBe(0);
    expect(claimWaitMs(NOW - 5_000, NOW, o, true)).toBe(0);
    expect(claimWaitMs(NOW - 5_000, NOW, o, false)).toBe(10);
  });
});
