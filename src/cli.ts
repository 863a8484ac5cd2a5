/**
 * The `chime` command and the process composition root (API.md "Start-up and configuration"):
 *   chime serve [--role api|dispatcher|all]   chime migrate   chime tenant create --name N   chime node
 */
import { parseArgs } from 'node:util';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'node': {
      const { runNodeProtocol } = await import('./node/index.ts');
      await runNodeProtocol({ input: process.stdin, output: process.stdout, log: process.stderr });
      return 0;
    }
    default:
      process.stderr.write(`usage: chime serve|migrate|tenant create --name N|node\n`);
      void parseArgs;
      void rest;
      return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
