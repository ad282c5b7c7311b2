// Entry of @abacus/workflows for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/workflows/src/index.js');
