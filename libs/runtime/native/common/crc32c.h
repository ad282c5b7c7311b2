#pragma once
#include <cstddef>
#include <cstdint>
namespace abacus {
// CRC-32C (Castagnoli) with the SSE4.2 instruction; every AVX2 machine has it.
uint32_t crc32c(uint32_t crc, const void* data, size_t n);
}
