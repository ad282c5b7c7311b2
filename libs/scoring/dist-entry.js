// Entry of @abacus/scoring for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/scoring/src/index.js');
