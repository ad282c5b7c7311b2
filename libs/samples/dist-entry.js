// Entry of @abacus/samples for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/samples/src/index.js');
