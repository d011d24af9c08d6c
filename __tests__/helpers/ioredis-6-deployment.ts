// Jest setup file of the ioredis-6 project: worker processes load ioredis 6 as well.
process.env.RLOCK_TEST_IOREDIS = '6';
