-- The RealmDomain of Zulip: the email domains of an organization whose
-- emails_restricted_to_domains setting limits who may join (GET, POST, PATCH and DELETE
-- /realm/domains). Stored lowercase, once per organization.
CREATE TABLE "realm_domain" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "domain" VARCHAR(80) NOT NULL,
    "allow_subdomains" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "realm_domain_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "realm_domain_realm_id_domain_key" ON "realm_domain"("realm_id", "domain");

ALTER TABLE "realm_domain" ADD CONSTRAINT "realm_domain_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
