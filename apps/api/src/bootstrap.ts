import 'reflect-metadata';
import { Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import helmet from 'helmet';
import type { AppConfig } from '@abacus/configs';
import { createDataSource } from '@abacus/data';
import { QueueService } from '@abacus/queue';
import { AppModule } from './app.module';
import { DomainExceptionFilter, isBodyParserError, sendBodyError } from './common/domain-exception.filter';
import { serveWebApp, webAppDir } from './common/web-app';

export interface ApiHandle {
  app: INestApplication;
  url: string;
  close(): Promise<void>;
}

/** Builds and starts the API (used by main.ts and by the integration tests). */
export async function startApi(config: AppConfig, opts: { port?: number; logger?: false | undefined } = {}): Promise<ApiHandle> {
  const ds = createDataSource(config);
  await ds.initialize();
  if (await ds.showMigrations()) {
    await ds.destroy();
    throw new Error('the database has pending migrations: run `npm run migrate` first');
  }
  const queue = new QueueService(config);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, ds, queue), {
    logger: opts.logger === false ? false : ['error', 'warn', 'log'],
    // body parsers are added below with the configured limit (express's own default is 100 kB)
    bodyParser: false,
  });
  const limit = `${config.ABACUS_JSON_LIMIT_KB}kb`;
  app.useBodyParser('json', { limit });
  app.useBodyParser('urlencoded', { limit, extended: true });
  // body-parser's errors answered here, before Nest turns a JSON SyntaxError into a bare 400 of the parser's words
  app.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (isBodyParserError(err)) sendBodyError(err, res, config.ABACUS_JSON_LIMIT_KB);
    else next(err);
  });
  app.setGlobalPrefix('api/v1');
  app.use(
    helmet({
      // the API is often served over plain HTTP (localhost, a private network): upgrading would break the page
      contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
    }),
  );
  // the web app at / (apps/web, built by `npm run build`): its files, and index.html for its deep links
  serveWebApp(app, webAppDir());
  // closed unless origins are configured: no CORS headers at all by default
  if (config.ABACUS_CORS_ORIGINS.length) {
    app.enableCors({
      origin: config.ABACUS_CORS_ORIGINS,
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type'],
      exposedHeaders: ['x-request-id', 'retry-after'],
      maxAge: 600,
    });
  }
  app.useGlobalFilters(
    new DomainExceptionFilter({ jsonLimitKb: config.ABACUS_JSON_LIMIT_KB, uploadLimitMb: config.ABACUS_UPLOAD_LIMIT_MB }),
  );
  // no enableShutdownHooks: main.ts owns SIGTERM, so close() can drain in-flight requests and exit 0
  const doc = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Abacus')
      .setDescription('Feature-value experimentation for CTR and conversion models')
      .setVersion('1')
      .addBearerAuth(
        { type: 'http', scheme: 'bearer', bearerFormat: 'abk_…', description: 'an Abacus API key (abacus keys create)' },
        'api-key',
      )
      .build(),
  );
  SwaggerModule.setup('api/docs', app, doc, { jsonDocumentUrl: 'api/docs-json' });
  const port = opts.port ?? config.ABACUS_API_PORT;
  await app.listen(port, config.ABACUS_API_HOST);
  // idle keep-alive sockets stay open well past a client's own keep-alive (Node's fetch: 4 s), so a
  // client never sends on a socket the server is closing at that moment ("other side closed")
  const server = app.getHttpServer() as import('node:http').Server;
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const addr = server.address() as { port: number };
  const url = `http://127.0.0.1:${addr.port}`;
  Logger.log(`API on ${url}/api/v1, docs on ${url}/api/docs`, 'abacus-api');
  return {
    app,
    url,
    close: async () => {
      await app.close();
      await queue.close();
      await ds.destroy();
    },
  };
}
