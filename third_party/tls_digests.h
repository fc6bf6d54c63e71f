// Makes OpenSSL's digests findable by name again, for TLS.
//
// httplib_no_tls_init.cc keeps OpenSSL from registering every cipher and
// digest name at start (1.7 MiB of resident pages a plain-HTTP daemon never
// needs). TLS needs the digests' names: checking a certificate's signature
// looks its digest up by NID (EVP_get_digestbynid), and without them every
// certificate that is not self-signed "does not load" and no server
// certificate verifies. Call this before making a TLS context or client;
// it registers the SHA-1/SHA-2/SHA-3 families once.
#pragma once

namespace mesh::third_party {

void RegisterTlsDigests();

}  // namespace mesh::third_party
