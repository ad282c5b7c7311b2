import { Logger } from '@nestjs/common';

/**
 * Runs `pass` every `intervalMs` (0 = never), never overlapping the previous pass; a failed pass is
 * logged and tried again next time. `stop()` waits for a pass in progress.
 */
export class PeriodicPass {
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly what: string,
    private readonly pass: () => Promise<unknown>,
    context: string,
  ) {
    this.logger = new Logger(context);
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.pass()
        .catch((err: Error) => this.logger.warn(`${this.what} failed (will try again): ${err.message}`))
        .finally(() => (this.running = null));
    }, intervalMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
