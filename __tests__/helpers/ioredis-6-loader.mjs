// Preloaded (`node --import`) into the worker processes of the ioredis-6 test project, so that they
// load ioredis 6 too, as jest's moduleNameMapper makes the test files do. Workers are CommonJS
// (run through tsx): their `require('ioredis')` is resolved here.
import Module from 'node:module';

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolveFilename.call(this, request === 'ioredis' ? 'ioredis-6' : request, ...rest);
};
