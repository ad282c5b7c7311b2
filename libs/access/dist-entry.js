// Entry of @abacus/access for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/access/src/index.js');
