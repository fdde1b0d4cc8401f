'use strict';
// The worker thread that analyses files one at a time for main.js, so that a
// file past its budget can be stopped (the thread is terminated) without
// stopping the review.

const { parentPort, workerData } = require('worker_threads');
const run = require('./run');

run.setup(workerData);
parentPort.on('message', (job) => {
  parentPort.postMessage(run.file(job.path, job.budgetMs));
});
