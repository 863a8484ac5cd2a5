#!/usr/bin/env node
// The `chime` command: runs src/cli.ts through tsx, so the package ships its TypeScript sources as they are.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
