// Entry of @abacus/data for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/data/src/index.js');
