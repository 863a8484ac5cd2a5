/**
 * `/console/usage` (`?days=7|14|30|90`): the tenant's success rate, fire lag and open jobs as cards, and its runs per
 * UTC day by outcome as a stacked bar chart (uPlot, on a canvas) with the same numbers in a table for screen readers.
 */

import { useEffect, useRef } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import uPlot from 'uplot';
import { qs } from '../api.ts';
import { useSession } from '../session.tsx';
import type { Usage } from '../types.ts';
import { ErrorNote, useAsync } from '../ui.tsx';

const DAY_CHOICES = [7, 14, 30, 90] as const;
const DEFAULT_DAYS = 14;
const CHART_HEIGHT = 260;
const DAY_S = 86_400;

type Day = Usage['daily'][number];
type Outcome = 'succeeded' | 'failed' | 'expired' | 'skipped';

/** The outcomes bottom to top of each stacked bar, with their colours (those of the status badges; console.css `.swatch-*` too). */
const OUTCOMES: { key: Outcome; label: string; colour: string }[] = [
  { key: 'succeeded', label: 'Succeeded', colour: '#2e9e5b' },
  { key: 'failed', label: 'Failed', colour: '#c8372d' },
  { key: 'expired', label: 'Expired', colour: '#e08a00' },
  { key: 'skipped', label: 'Skipped', colour: '#98a2ad' },
];

const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });
const integer = new Intl.NumberFormat();

/** A UTC day `YYYY-MM-DD` as its start in seconds since the epoch (uPlot's x values). */
function dayStart(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 1000;
}

/** A UTC day (seconds) as a short date ("Nov 24"), read in UTC. */
function dayLabel(seconds: number): string {
  return new Date(seconds * 1000).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/** Succeeded over finished runs (failed and expired count against; skipped not at all); null when none finished. */
export function successRate(daily: readonly Day[]): number | null {
  let ok = 0;
  let all = 0;
  for (const d of daily) {
    ok += d.succeeded;
    all += d.succeeded + d.failed + d.expired;
  }
  return all === 0 ? null : ok / all;
}

/** The usage page: the period's cards, chart and table. */
export function UsagePage() {
  const { api } = useSession();
  const { query, route } = useLocation();
  const asked = Number(query.days);
  const days = (DAY_CHOICES as readonly number[]).includes(asked) ? asked : DEFAULT_DAYS;
  const usage = useAsync(() => api<Usage>('GET', `/v1/usage${qs({ days })}`), [days]);
  const u = usage.data;
  const rate = u ? successRate(u.daily) : null;
  const ms = (v: number | undefined) => (v === undefined ? '—' : `${integer.format(v)} ms`);

  return (
    <section>
      <h1>Usage</h1>
      <form class="toolbar" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="usage-days">Days</label>
          <select
            id="usage-days"
            value={String(days)}
            onChange={(e) => route(`/console/usage${qs({ days: e.currentTarget.value })}`, true)}
          >
            {DAY_CHOICES.map((d) => (
              <option value={String(d)}>{d}</option>
            ))}
          </select>
        </div>
      </form>
      <ErrorNote error={usage.error} />
      {!u && !usage.error && <p class="muted">Loading…</p>}
      {u && (
        <>
          <div class="cards" aria-busy={usage.loading}>
            <Card
              label="Success rate"
              value={rate === null ? '—' : percent.format(rate)}
              hint={`of the runs finished in the last ${days} days`}
            />
            <Card label="Fire lag p50" value={ms(u.fireLagMs?.p50)} hint="runs started in the last 24 h" />
            <Card label="Fire lag p99" value={ms(u.fireLagMs?.p99)} hint="runs started in the last 24 h" />
            <Card label="Active jobs" value={integer.format(u.jobs.active)} />
            <Card label="Paused jobs" value={integer.format(u.jobs.paused)} />
          </div>
          <figure class="chart">
            <figcaption>
              Runs per day by outcome (succeeded, failed, expired, skipped, stacked), UTC days {dayLabel(dayStart(u.daily[0]?.date ?? ''))}{' '}
              to {dayLabel(dayStart(u.daily[u.daily.length - 1]?.date ?? ''))}.
            </figcaption>
            <RunsChart daily={u.daily} />
            <ul class="legend" aria-label="Legend">
              {OUTCOMES.map((o) => (
                <li>
                  <span class={`swatch swatch-${o.key}`} aria-hidden="true" />
                  {o.label}
                </li>
              ))}
            </ul>
          </figure>
          <div class="table-wrap">
            <table class="usage-days stack">
              <caption>Runs per day</caption>
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  {OUTCOMES.map((o) => (
                    <th scope="col" class="num" key={o.key}>
                      {o.label}
                    </th>
                  ))}
                  <th scope="col" class="num">
                    Attempts
                  </th>
                </tr>
              </thead>
              <tbody>
                {u.daily.map((d) => (
                  <tr key={d.date}>
                    <th scope="row">
                      <time dateTime={d.date}>{d.date}</time>
                    </th>
                    {OUTCOMES.map((o) => (
                      <td class="num" data-label={o.label}>
                        {d[o.key]}
                      </td>
                    ))}
                    <td class="num" data-label="Attempts">
                      {d.attempts}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

function Card({ label, value, hint }: { label: string; value: string; hint?: string }) {
  return (
    <div class="card">
      <div class="label">{label}</div>
      <div class="value">{value}</div>
      {hint && <div class="hint">{hint}</div>}
    </div>
  );
}

/**
 * The stacked bars of `daily`. uPlot has no stacking of its own: each series is drawn as the running total up to its
 * outcome, tallest first, so each later (shorter) bar covers the lower part of the one before; the table below gives
 * each outcome's own count.
 */
function RunsChart({ daily }: { daily: readonly Day[] }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const xs = daily.map((d) => dayStart(d.date));
    const totals = OUTCOMES.map((_, i) => daily.map((d) => OUTCOMES.slice(0, i + 1).reduce((n, o) => n + d[o.key], 0)));
    const drawn = OUTCOMES.map((o, i) => ({ outcome: o, totals: totals[i]! })).reverse();
    const top = Math.max(0, ...(totals[totals.length - 1] ?? []));
    const opts: uPlot.Options = {
      width: el.clientWidth || 600,
      height: CHART_HEIGHT,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      // The legend is the page's own (one entry per outcome, bottom to top); the table below has every count.
      legend: { show: false },
      scales: {
        x: { time: true, range: (_u, min, max) => [min - DAY_S / 2, max + DAY_S / 2] },
        y: { range: () => [0, top === 0 ? 1 : Math.ceil(top * 1.1)] },
      },
      axes: [
        { space: 56, incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S], values: (_u, splits) => splits.map(dayLabel) },
        { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7], size: 56 },
      ],
      series: [
        { label: 'Day' },
        ...drawn.map(({ outcome }) => ({
          label: outcome.label,
          fill: outcome.colour,
          stroke: outcome.colour,
          width: 0,
          paths: uPlot.paths.bars!({ size: [0.7, 48], align: 0 }),
          points: { show: false },
        })),
      ],
    };
    const plot = new uPlot(opts, [xs, ...drawn.map((d) => d.totals)], el);
    const resize = new ResizeObserver(() => {
      const width = el.clientWidth;
      if (width > 0 && width !== plot.width) plot.setSize({ width, height: CHART_HEIGHT });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [daily]);
  // The canvas shows what the table below says in words: hidden from assistive technology.
  return <div class="chart-host" ref={host} aria-hidden="true" />;
}
