// Entry of @abacus/runtime for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/runtime/src/index.js');
