// Jest setup file of the cluster project: the portable test files run against a Redis Cluster.
process.env.RLOCK_TEST_DEPLOYMENT = 'cluster';
