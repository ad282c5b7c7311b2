// Entry of @abacus/catalog for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/catalog/src/index.js');
