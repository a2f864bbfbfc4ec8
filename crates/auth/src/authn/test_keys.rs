//! Keys for tests, generated once with OpenSSL 3.0 and kept here so that the JWT tests run
//! without it. Never used outside tests.

/// An RSA 2048 private key (PKCS #8), `openssl genpkey -algorithm RSA`.
pub(crate) const RSA_PRIVATE: &str = "\
-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDKAq/2OcH3ZIsC
9tV82gIhi6VJ6RS0poP4N2sZTeLztLupK2yu+9dE1TZ5N8bcMNwDl44Q85Z+vBTs
5gE9Bod8IAqERDl8vI8OYzCM0lW4uD9YArKI/DGYYM4KMeCTulThIZ3p4gN1//bO
TH2O8Cj4kUxmSbV3kWr3BaLVXld6g5W2HnLiBkCEDv+5G9RFjhvSUaYGP2WsBK8V
TvR0qvNTlYtovnni+E1T5tX5sTA1ZFcfVcVS6XIHnWrcLEXrqoxJs2o5WQu0FEzz
BHv4nOqM7PmrHPVY2ibKevA5Y6leXvqavzgqXL3mDw593barOAYp9XjX/jHBqaZS
DxQf1OIvAgMBAAECggEAFoLd0firZ/gL0leTAHfuNIfHx73na/QsZlI3/Ji52ZeX
2/5gp6VH3r31yo9PzpohQm3hS9FL7DE7EbqAg9OWRduaNcAWjz3B9q6l/+Nb4HBO
cBko2mwO03YM2oT8C5UAQBr2FSn1txtq3krBfoFpHL4FqgESbacbqOMMu23pHgKY
0LXWGmCEl8mknr2bpiL/JDO8nVk4Ss7WgfmuVGzayINvip8mYKTRIf6SazrhxC8E
V0qqbr6GudbEdnGC7YbIKRUltU+K0LaSMGIi205Rw6/IszYfD2cfDHYgQBrteHZe
/F7R2reY2NKY7QHEWEyoKnkPvp8oSKK9mJx7lgonYQKBgQDnkh9v4ztm/arZJfYl
mDdAqgm+E6nWUxemJzEWQfraw103yXww1lFk7gzdeN7nO4Q9L4nTQs6wakVHWhwH
blkyhyN5ssCUbz3a5g57krULDwAW8eUErkekLj9DhO8Y+CGQW3WCt9CssGiuo6W1
oqO9bRkbUTAHL9wtM1GvMKc+zwKBgQDfUj/d6EK0K7qzUtt4+QUjGmRyIue2zgFT
VNnrDBH5ljNb3QuaLQFUalNDk6brHlydlgZjmQqn/VOGQ2gXlzn7JmyT/4zCcAQA
LP/7u295ZKT10+T9GQHV1eg8CpewzdzrxbfflgdS8vCJ2TOIunIFUGRhynMu1fUB
TqqlQZv+oQKBgQDLjPcTO7MwcZOm8qZuH2GZ9p0/tjsYyMtF4rdUMEUX3Jho/DOt
HgZH6LPoTWHp8bforIvC5ruV+KPS91Mh+Q5wyrcVN1nuX+YILybV2nxHLzVN9ezw
c11H5Nr5N7WPxjSCltIxR/Ami55IvFJh2YeCb46dI31LI/eux6hqjSLFowKBgQCI
7e2rKtZ7krSPb6aSrl2wAGbGdRCOzhGR/tz/eg8rciVbllWe2ymNkQQs00Pttlgj
Z/HS7+vQxUuJb5tLm7Y5gH3i4TZ1oilR0kXDHFJlpIhhEuO9LLArZVVYO0Z3akKj
bkAoH92txrgmTb+Dfo6bI4fpTjEB7r6jZpDLc0crAQKBgQCspP6R2qWM2UgLOOX2
n3RPycQpUF6ut31KpHVo5ck0SyySxBkp9WQ5V/ggbg+uP/dW7B/R6hW3HdZ6B6Jh
5/jfFfWkpAXjjSn2HDXhPpALUSuI1wy/Rse9vchTSzCG828WW4c1g65kJyNfZgas
TidJZlcPkuCaWZOD+W0h86oQLA==
-----END PRIVATE KEY-----
";

/// Its public key, `openssl pkey -pubout`.
pub(crate) const RSA_PUBLIC: &str = "\
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAygKv9jnB92SLAvbVfNoC
IYulSekUtKaD+DdrGU3i87S7qStsrvvXRNU2eTfG3DDcA5eOEPOWfrwU7OYBPQaH
fCAKhEQ5fLyPDmMwjNJVuLg/WAKyiPwxmGDOCjHgk7pU4SGd6eIDdf/2zkx9jvAo
+JFMZkm1d5Fq9wWi1V5XeoOVth5y4gZAhA7/uRvURY4b0lGmBj9lrASvFU70dKrz
U5WLaL554vhNU+bV+bEwNWRXH1XFUulyB51q3CxF66qMSbNqOVkLtBRM8wR7+Jzq
jOz5qxz1WNomynrwOWOpXl76mr84Kly95g8Ofd22qzgGKfV41/4xwammUg8UH9Ti
LwIDAQAB
-----END PUBLIC KEY-----
";

/// The same public key as PKCS #1, `openssl rsa -RSAPublicKey_out`.
pub(crate) const RSA_PUBLIC_PKCS1: &str = "\
-----BEGIN RSA PUBLIC KEY-----
MIIBCgKCAQEAygKv9jnB92SLAvbVfNoCIYulSekUtKaD+DdrGU3i87S7qStsrvvX
RNU2eTfG3DDcA5eOEPOWfrwU7OYBPQaHfCAKhEQ5fLyPDmMwjNJVuLg/WAKyiPwx
mGDOCjHgk7pU4SGd6eIDdf/2zkx9jvAo+JFMZkm1d5Fq9wWi1V5XeoOVth5y4gZA
hA7/uRvURY4b0lGmBj9lrASvFU70dKrzU5WLaL554vhNU+bV+bEwNWRXH1XFUuly
B51q3CxF66qMSbNqOVkLtBRM8wR7+JzqjOz5qxz1WNomynrwOWOpXl76mr84Kly9
5g8Ofd22qzgGKfV41/4xwammUg8UH9TiLwIDAQAB
-----END RSA PUBLIC KEY-----
";

/// An EC P-256 private key (PKCS #8), `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`.
pub(crate) const EC_PRIVATE: &str = "\
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgI3NB6OdeDv9ackBR
rBc+2sWb003KM/6bPTEbfXHhMVihRANCAAQmooLenPUNUNyn948VLg8z7nH+sHI3
yQohrtTwEwtrOVnGRZtgZk1MRBi7hTR5dMErQtm09yP9L18Cb3WxwAxK
-----END PRIVATE KEY-----
";

/// Its public key.
pub(crate) const EC_PUBLIC: &str = "\
-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEJqKC3pz1DVDcp/ePFS4PM+5x/rBy
N8kKIa7U8BMLazlZxkWbYGZNTEQYu4U0eXTBK0LZtPcj/S9fAm91scAMSg==
-----END PUBLIC KEY-----
";

/// An EC P-384 public key (not usable for ES256).
pub(crate) const P384_PUBLIC: &str = "\
-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEgXAw3gucXJ3J8pTSH839+MbThy+4qYmd
myOYZ24OaW4IV1XwJSuoJHwAHvXCZ7U9GitkoPJASCRnNYlzc0ZLyxTHp86qUDfz
c5+SmLhiiIb4LVI6OfUqRvOvxIAxIpzN
-----END PUBLIC KEY-----
";

/// An Ed25519 public key (not supported).
pub(crate) const ED25519_PUBLIC: &str = "\
-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAa6b9CnRy0W0MuqKf3mSxrf28OFgubIMxkiEVbedXeSk=
-----END PUBLIC KEY-----
";
