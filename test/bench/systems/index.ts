/** Creates a system under test by its spec, and installs each family's schema into its template database. */
import { ChimeSystem } from './chime.ts';
import { GraphileSystem } from './graphile.ts';
import { PgBossSystem } from './pgboss.ts';
import type { BenchContext, BenchSystem, Family, SystemSpec } from './types.ts';

/** A fresh database cloned from the family's template, with the system's registration path ready (worker not started). */
export function createSystem(spec: SystemSpec, ctx: BenchContext): Promise<BenchSystem> {
  switch (spec.family) {
    case 'chime':
      return ChimeSystem.create(spec, ctx);
    case 'pgboss':
      return PgBossSystem.create(spec, ctx);
    case 'graphile':
      return GraphileSystem.create(spec, ctx);
  }
}

/** Installs `family`'s schema (migrations) into the database at `url`. */
export function installSchema(family: Family, url: string): Promise<void> {
  switch (family) {
    case 'chime':
      return ChimeSystem.install(url);
    case 'pgboss':
      return PgBossSystem.install(url);
    case 'graphile':
      return GraphileSystem.install(url);
  }
}

/** Runs `fn` on a fresh `spec` system and always stops it (processes ended, database dropped). */
export async function withSystem<T>(spec: SystemSpec, ctx: BenchContext, fn: (sys: BenchSystem) => Promise<T>): Promise<T> {
  const sys = await createSystem(spec, ctx);
  try {
    return await fn(sys);
  } finally {
    await sys.stop().catch((err) => ctx.log(`  ${spec.id}: stopping failed: ${String(err)}`));
  }
}
