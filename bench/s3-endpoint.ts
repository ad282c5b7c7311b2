/**
 * A local S3 endpoint for benchmarks on a host without one (s3rver on a loopback port, its objects
 * under DIR, the bucket made at start; the key pair S3RVER / S3RVER):
 *   node s3-endpoint.js DIR PORT BUCKET
 * bench/gpu-scale.sh bundles it (esbuild) when S3=1.
 */
import S3rver from 's3rver';

async function main(): Promise<void> {
  const [directory, port, bucket] = process.argv.slice(2);
  if (!directory || !port || !bucket) throw new Error('usage: s3-endpoint DIR PORT BUCKET');
  const server = new S3rver({
    port: Number(port),
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  await server.run();
  process.stdout.write(`s3 endpoint http://127.0.0.1:${port} (bucket ${bucket}, objects under ${directory})\n`);
}

void main();
