// Entry of @abacus/queue for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/queue/src/index.js');
