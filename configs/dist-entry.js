// Entry of @abacus/configs for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../dist/configs/index.js');
