import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

/**
 * A local S3 endpoint for tests: s3rver on a loopback port, its objects in a temporary directory.
 * Clients talk to it over HTTP exactly as to S3 (path-style addressing, signed requests; s3rver
 * accepts the key pair S3RVER / S3RVER).
 */
export interface LocalS3 {
  endpoint: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** environment for a process that should use this endpoint as its default S3 */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startLocalS3(buckets: string[] = []): Promise<LocalS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  return {
    endpoint,
    credentials,
    env: {
      ABACUS_S3_ENDPOINT: endpoint,
      ABACUS_S3_REGION: 'us-east-1',
      ABACUS_S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
    async stop() {
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
