import { useRedis } from '../helpers/setup';
import { startWorker } from '../helpers/workers';

/**
 * The suite runs on ioredis 5, and its ioredis-6 project (jest.config.ts) reruns part of it on
 * ioredis 6: this says that each project, and the worker processes it starts, really loads the
 * major it is named for. ioredis 6 speaks RESP3 by default, 5 only RESP2; the server tells which.
 */
const major = process.env.RLOCK_TEST_IOREDIS === '6' ? '6' : '5';
const expected =
  major === '6'
    ? { resp: '3', path: /node_modules\/ioredis-6\// }
    : { resp: '2', path: /node_modules\/ioredis\// };

describe(`the ioredis of this project (${major})`, () => {
  const redis = useRedis();

  test('is what the test files and the library load', async () => {
    const connection = redis.connect();
    const info = String(await connection.client('INFO'));
    expect(/\bresp=(\d)/.exec(info)?.[1]).toBe(expected.resp);
    expect(require.resolve('ioredis')).toMatch(expected.path);
  });

  test('is what worker processes load', async () => {
    const worker = startWorker([String(redis.port())], {}, 'ioredis-worker');
    try {
      const report = JSON.parse(await worker.firstMessage);
      expect(report.resp).toBe(expected.resp);
      expect(report.path).toMatch(expected.path);
    } finally {
      worker.child.kill('SIGKILL');
    }
  });
});
