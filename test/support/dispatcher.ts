/**
 * A Node dispatcher in the test process, as the service wires one: the real undici delivery through `agent`, the
 * store's keyring, the system clock, a silent logger; `deps` overrides any of them (metrics, a clock, a logger).
 */
import { pino } from 'pino';
import type { Agent } from 'undici';
import { createDeliver } from '../../src/dispatch/deliver.ts';
import {
  createDispatcher,
  type Dispatcher,
  type DispatcherDeps,
  type DispatcherOptions,
} from '../../src/dispatch/drivers/node-dispatcher.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { TestStore } from './store.ts';

/** A dispatcher (not started) on `store`'s database, delivering through `agent`, with `options` over the defaults. */
export function testDispatcher(
  store: TestStore,
  agent: Agent,
  options: Partial<DispatcherOptions> = {},
  deps: Partial<DispatcherDeps> = {},
): Dispatcher {
  return createDispatcher({
    database: store.database,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    deliver: createDeliver(agent),
    keyring: createKeyring(store.ctx),
    userAgent: 'chime-test',
    options,
    ...deps,
  });
}
