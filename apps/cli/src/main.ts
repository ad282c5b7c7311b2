import { Command, CommanderError } from 'commander';
import { ConfigError } from '@abacus/configs';
import { CliError } from './commands/command.types';
import { COMMANDS } from './commands';

export function buildProgram(): Command {
  const program = new Command('abacus')
    .description('Abacus: feature-value experiments for CTR and conversion models')
    .option('--api <url>', 'API base URL (default: ABACUS_API_URL or http://localhost:3000)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of COMMANDS) register(program);
  const exitOverride = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(exitOverride);
  };
  exitOverride(program);
  return program;
}

export async function run(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version print and exit 0; usage errors were already printed by commander
      return err.exitCode;
    }
    if (err instanceof CliError) {
      process.stderr.write(`abacus: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`abacus: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`abacus: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
