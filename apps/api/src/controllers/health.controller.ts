import { Controller, Get, HttpStatus, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { QueueService } from '@abacus/queue';
import { SkipThrottle } from '@nestjs/throttler';
import { Access } from '../common/access.decorator';
import { describeBackends } from '../common/runtime-info';

const CHECK_TIMEOUT_MS = 2000;

@ApiTags('health')
@Controller('health')
@Access('public')
// probes (load balancers, the quick start) poll it; it reads no data worth limiting
@SkipThrottle()
export class HealthController {
  constructor(
    private readonly ds: DataSource,
    @Inject(QueueService) private readonly queue: QueueService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Postgres, Redis and runtime backend status; 503 when a dependency is down' })
  async health(@Res() res: Response): Promise<void> {
    const check = async (fn: () => Promise<unknown>) => {
      const t0 = Date.now();
      let timer: NodeJS.Timeout | undefined;
      // while a server is down its client queues commands until it reconnects: answer degraded instead of hanging
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      });
      try {
        await Promise.race([fn(), timeout]);
        return { ok: true, latencyMs: Date.now() - t0 };
      } catch (err) {
        return { ok: false, error: (err as Error).message };
      } finally {
        clearTimeout(timer);
      }
    };
    const [postgres, redis] = await Promise.all([check(() => this.ds.query('SELECT 1')), check(() => this.queue.ping())]);
    const runtime = describeBackends();
    const ok = postgres.ok && redis.ok;
    res
      .status(ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE)
      .json({ status: ok ? 'ok' : 'degraded', postgres, redis, runtime });
  }
}
