#include "mcp/crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/lazy_library.h"

namespace byd::mcp {
namespace {

struct CryptoApi {
  unsigned char* (*hmac)(const EVP_MD*, const void*, int, const unsigned char*, size_t,
                         unsigned char*, unsigned int*);
  int (*digest)(const void*, size_t, unsigned char*, unsigned int*, const EVP_MD*, ENGINE*);
  const EVP_MD* (*sha256)();
};

bool bindCrypto(void* lib, CryptoApi& api) {
  return bindSymbol(lib, "HMAC", api.hmac) && bindSymbol(lib, "EVP_Digest", api.digest) &&
         bindSymbol(lib, "EVP_sha256", api.sha256);
}

Result<const CryptoApi*> cryptoApi() {
  return loadLibraryOnce<CryptoApi>("libcrypto.so.3", bindCrypto,
                                    "hashing tokens and signing requestState", "libssl3");
}

std::string toHex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 0xf];
  }
  return out;
}

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

Result<std::string> sha256Hex(std::string_view data) {
  BYD_ASSIGN_OR_RETURN(const CryptoApi* crypto, cryptoApi());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (crypto->digest(data.data(), data.size(), out, &len, crypto->sha256(), nullptr) != 1) {
    return internalError("SHA-256 failed");
  }
  return toHex(out, len);
}

Result<std::string> hmacSha256Hex(std::string_view key, std::string_view data) {
  BYD_ASSIGN_OR_RETURN(const CryptoApi* crypto, cryptoApi());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (crypto->hmac(crypto->sha256(), key.data(), static_cast<int>(key.size()), bytes(data),
                   data.size(), out, &len) == nullptr) {
    return internalError("HMAC-SHA256 failed");
  }
  return toHex(out, len);
}

bool equalConstantTime(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) diff |= (i < a.size() ? a[i] : 0) ^ b[i];
  return diff == 0;
}

}  // namespace byd::mcp
