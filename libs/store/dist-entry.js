// Entry of @abacus/store for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/store/src/index.js');
