import type { Command } from 'commander';

/** Every CLI subcommand module exports one `register` of this type; commands/index.ts lists them. */
export type RegisterCommand = (program: Command) => void;

/** Thrown for user errors: printed without a stack trace, exit code 1 (or `exitCode`). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
