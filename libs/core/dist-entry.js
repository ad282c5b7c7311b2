// Entry of @abacus/core for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/core/src/index.js');
